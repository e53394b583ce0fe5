"""The vocoder's exact speed-ups, each measured against the form it replaced, alternated in one process.

    python -m omni_cli.backends.hf.tiny ./tiny-omni
    python examples/hf_vocoder_ab.py ./tiny-omni [--rounds 2] [--repeats 5]

- BigVGAN: `LeanBigVGAN(module, fir=False)` (its anti-aliasing filters as torch's depthwise convolutions)
  against `LeanBigVGAN(module)` (the same filters as multiply-add chains), on 16, 64 and 224 mel frames
  and a batch of 8 x 64;
- the DiT: a window's ODE with the boolean attention masks `DiTDecoderLayer.forward` makes against the
  additive float masks `WindowVelocity` hands over, on windows of 72 and 264 frames and 8 x 264;
- the DiT's velocity evaluation through its own modules (`attn_norm`, `attn`, `ff`, `norm_out` called as
  `DiTDecoderLayer.forward` calls them, the time embedding computed on each evaluation) against
  `WindowVelocity`'s lean one (the time part looked up in the `TimeModulation` the vocoder makes at load,
  functional calls, the rotary as four operations), on the same windows, both with float masks.

Each line is one round of one case: the best of `--repeats` timed calls (after one untimed) for each form,
and whether the two outputs are equal bit for bit (they must be: both changes are exact). One intra-op
thread, as the hf components run by default.
"""

from __future__ import annotations

import argparse
from functools import partial


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkpoint")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--small", action="store_true", help="short inputs only (a quick check)")
    args = parser.parse_args()

    import torch
    from token2wav_parts import best_ms, load_parts

    from omni_cli.backends.hf import dit as ditmod
    from omni_cli.backends.hf.bigvgan import LeanBigVGAN

    t2w = load_parts(args.checkpoint)
    bigvgan, dit, mel_dim = t2w.bigvgan, t2w.dit, t2w.mel_dim
    cond, features, settings = t2w.cond, t2w.features, t2w.settings
    convolutions, chains = LeanBigVGAN(bigvgan, fir=False), LeanBigVGAN(bigvgan)
    made = ditmod.WindowVelocity.__init__

    def boolean_masks(self, *a, **k):
        made(self, *a, **k)
        self.attention = [mask == 0 for mask in self.attention]  # True where a frame may attend, as transformers has it

    class ModuleVelocity(ditmod.WindowVelocity):
        """The evaluation as the DiT's modules compute it (the form before the lean one)."""

        def __init__(self, *a, **k):
            super().__init__(*a, **k)
            like = torch.empty(self.rows, self.code_embed.shape[1], 1)
            self.position_embeddings = dit.rotary_embed(like, torch.arange(like.shape[1])[None].repeat(self.rows, 1))

        def __call__(self, time, state):
            embedding = dit.time_embed(time.repeat(self.rows))
            hidden = torch.cat([state, state], dim=0) if self.guided else state
            hidden = dit.input_embed.proj(torch.cat((hidden, self.condition, self.code_embed, self.speaker), dim=-1))
            for block, mask in zip(dit.transformer_blocks, self.attention, strict=True):
                norm, gate_msa, shift_mlp, scale_mlp, gate_mlp = block.attn_norm(hidden, emb=embedding)
                attended = block.attn(hidden_states=norm, position_embeddings=self.position_embeddings,
                                      attention_mask=mask)
                hidden = hidden + gate_msa.unsqueeze(1) * attended
                norm = block.ff_norm(hidden) * (1 + scale_mlp[:, None]) + shift_mlp[:, None]
                hidden = hidden + gate_mlp.unsqueeze(1) * block.ff(norm)
            out = dit.proj_out(dit.norm_out(hidden, embedding))
            if not self.guided:
                return out
            guided, null = torch.chunk(out, 2, dim=0)
            return guided + (guided - null) * self.guidance

    steps = ditmod.TimeModulation(dit, settings, torch.device("cpu"), torch.float32)  # as the vocoder makes at load

    def evaluation(frames: int, rows: int, form: str):
        codes = torch.randint(0, dit.config.num_embeds, (rows, frames // dit.repeats),
                              generator=torch.Generator().manual_seed(2))
        noise = torch.randn(rows, frames, mel_dim, generator=torch.Generator().manual_seed(3))
        lean = ditmod.WindowVelocity

        def run():
            ditmod.WindowVelocity = ModuleVelocity if form == "modules" else lean
            try:
                return ditmod.sample_window(dit, noise, codes, cond.expand(rows, -1), features, settings, steps)
            finally:
                ditmod.WindowVelocity = lean
        return run

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
            for make, (old_form, old_name), (new_form, new_name) in (
                    (window, ("boolean", "boolean masks"), ("float", "float masks")),
                    (evaluation, ("modules", "modules"), ("lean", "lean evaluation"))):
                for frames, rows in windows:
                    old, new = make(frames, rows, old_form), make(frames, rows, new_form)
                    same = torch.equal(old(), new())
                    before, after = best_ms(old, args.repeats), best_ms(new, args.repeats)
                    print(f"round {round_}  DiT {rows} x {frames:3d} frames  {old_name} {before:7.1f} ms  "
                          f"{new_name} {after:7.1f} ms  bit-equal {same}", flush=True)


if __name__ == "__main__":
    main()
