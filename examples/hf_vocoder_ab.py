"""The vocoder's two exact speed-ups, each measured against the form it replaced, alternated in one process.

    python -m omni_cli.backends.hf.tiny ./tiny-omni
    python examples/hf_vocoder_ab.py ./tiny-omni [--rounds 2] [--repeats 5]

- BigVGAN: `LeanBigVGAN(module, fir=False)` (its anti-aliasing filters as torch's depthwise convolutions)
  against `LeanBigVGAN(module)` (the same filters as multiply-add chains), on 16, 64 and 224 mel frames
  and a batch of 8 x 64;
- the DiT: a window's ODE with the boolean attention masks `DiTDecoderLayer.forward` makes against the
  additive float masks `WindowVelocity` hands over, on windows of 72 and 264 frames and 8 x 264.

Each line is one round of one case: the best of `--repeats` timed calls (after one untimed) for each form,
and whether the two outputs are equal bit for bit (they must be: both changes are exact). One intra-op
thread, as the hf components run by default.
"""

from __future__ import annotations

import argparse
import time
from functools import partial


def best_ms(call, repeats: int) -> float:
    call()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        best = min(best, time.perf_counter() - start)
    return best * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkpoint")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--small", action="store_true", help="short inputs only (a quick check)")
    args = parser.parse_args()

    import torch
    from transformers import Qwen2_5OmniForConditionalGeneration
    from transformers.utils import logging

    logging.set_verbosity_error()  # the tiny checkpoint's config warnings are not the measurement

    from omni_cli.backends.hf import dit as ditmod
    from omni_cli.backends.hf.bigvgan import LeanBigVGAN

    torch.set_num_threads(1)
    model = Qwen2_5OmniForConditionalGeneration.from_pretrained(args.checkpoint).eval()
    bigvgan, dit = model.token2wav.code2wav_bigvgan_model, model.token2wav.code2wav_dit_model
    convolutions, chains = LeanBigVGAN(bigvgan, fir=False), LeanBigVGAN(bigvgan)
    mel_dim = bigvgan.config.mel_dim
    cond = torch.randn(1, dit.config.enc_emb_dim, generator=torch.Generator().manual_seed(0))
    ref_mel = torch.randn(1, 40, mel_dim, generator=torch.Generator().manual_seed(1))
    settings = ditmod.ODESettings()
    features = ditmod.speaker_features(dit, ref_mel, settings.is_guided)
    made = ditmod.WindowVelocity.__init__

    def boolean_masks(self, *a, **k):
        made(self, *a, **k)
        self.masks = [mask == 0 for mask in self.masks]  # True where a frame may attend, as transformers has it

    def window(frames: int, rows: int, masks: str):
        codes = torch.randint(0, dit.config.num_embeds, (rows, frames // dit.repeats),
                              generator=torch.Generator().manual_seed(2))
        noise = torch.randn(rows, frames, mel_dim, generator=torch.Generator().manual_seed(3))

        def run():
            ditmod.WindowVelocity.__init__ = boolean_masks if masks == "boolean" else made
            try:
                return ditmod.sample_window(dit, noise, codes, cond.expand(rows, -1), features, settings)
            finally:
                ditmod.WindowVelocity.__init__ = made
        return run

    mels = [(1, 16), (1, 64)] if args.small else [(1, 16), (1, 64), (1, 224), (8, 64)]
    windows = [(72, 1)] if args.small else [(72, 1), (264, 1), (264, 8)]
    with torch.no_grad():
        for round_ in range(1, args.rounds + 1):
            for batch, frames in mels:
                mel = torch.randn(batch, mel_dim, frames, generator=torch.Generator().manual_seed(frames)) * 3 - 4
                same = torch.equal(convolutions(mel), chains(mel))
                before = best_ms(partial(convolutions, mel), args.repeats)
                after = best_ms(partial(chains, mel), args.repeats)
                print(f"round {round_}  BigVGAN {batch} x {frames:3d} frames  convolutions {before:7.1f} ms  "
                      f"chains {after:7.1f} ms  bit-equal {same}", flush=True)
            for frames, rows in windows:
                old, new = window(frames, rows, "boolean"), window(frames, rows, "float")
                same = torch.equal(old(), new())
                before, after = best_ms(old, args.repeats), best_ms(new, args.repeats)
                print(f"round {round_}  DiT {rows} x {frames:3d} frames  boolean masks {before:7.1f} ms  "
                      f"float masks {after:7.1f} ms  bit-equal {same}", flush=True)


if __name__ == "__main__":
    main()
