"""The DiT's attention block by block against the whole window, alternated in one process, with the difference.

    python -m omni_cli.backends.hf.tiny ./tiny-omni
    python examples/hf_dit_blocks.py ./tiny-omni [--rounds 2] [--repeats 3] [--windows 1x72,4x120,4x264]

For each window (ROWSxFRAMES: rows of noise, mel frames), one round runs the card's ODE (10 time points,
36 velocity evaluations) twice over the same noise and codes: with transformers' whole-window masked
attention (`blocked_from=0`) and with each block of queries against the key blocks its layer keeps
(`BlockedAttention`, `blocked_from=1`). It prints the best of `--repeats` timed calls of each, their ratio,
and the mel's SNR of the blocked form against the whole-window one (the same terms summed in another
order: finite, far above 100 dB). One intra-op thread, as the hf components run by default. The vocoder's
`dit_block_attention_from` (5 by default) is where these rows say the blocks start to pay.
"""

from __future__ import annotations

import math


def main() -> None:
    from token2wav_parts import window_arguments

    args = window_arguments(__doc__, "1x72,1x120,4x72,4x120,4x168,4x264,2x400")

    import torch
    from token2wav_parts import best_ms, load_parts

    from omni_cli.backends.hf import dit as ditmod

    t2w = load_parts(args.checkpoint)
    dit = t2w.dit
    steps = ditmod.TimeModulation(dit, t2w.settings, torch.device("cpu"), torch.float32)
    windows = args.windows
    with torch.no_grad():
        for round_ in range(1, args.rounds + 1):
            for rows, frames in windows:
                codes = torch.randint(0, dit.config.num_embeds, (rows, frames // dit.repeats),
                                      generator=torch.Generator().manual_seed(2))
                noise = torch.randn(rows, frames, t2w.mel_dim, generator=torch.Generator().manual_seed(3))

                def run(blocked_from: int, codes=codes, noise=noise, rows=rows):
                    return ditmod.sample_window(dit, noise, codes, t2w.cond.expand(rows, -1), t2w.features,
                                                t2w.settings, steps, blocked_from)

                whole, blocks = run(0), run(1)
                error = float(((blocks - whole) ** 2).sum())
                snr = math.inf if error == 0 else 10 * math.log10(float((whole ** 2).sum()) / error)
                before = best_ms(lambda: run(0), args.repeats)
                after = best_ms(lambda: run(1), args.repeats)
                blocks_per_window = -(-frames // int(dit.block_size))
                print(f"round {round_}  DiT {rows} x {frames:3d} frames ({blocks_per_window:2d} blocks)  whole window "
                      f"{before:7.1f} ms  block by block {after:7.1f} ms  ratio {after / before:4.2f}  "
                      f"SNR {snr:5.1f} dB", flush=True)


if __name__ == "__main__":
    main()
