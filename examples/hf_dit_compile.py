"""The DiT's velocity compiled (`dit_compile: true`) against eager, alternated in one process, with the difference.

    python -m omni_cli.backends.hf.tiny ./tiny-omni
    python examples/hf_dit_compile.py ./tiny-omni [--rounds 2] [--repeats 3] [--windows 1x72,8x264]

It first compiles as the vocoder does when it loads (`DiTCompile.warm`: the card's forms, whole-window masks
under 5 blocks and blocks from there) and prints how long that took: far longer the first time on a machine
than once inductor's cache holds the kernels. Then, for each window (ROWSxFRAMES: rows of noise, mel frames),
one round runs the card's ODE (36 velocity evaluations) over the same noise and codes eager and compiled,
one thread each, and prints the best of `--repeats` timed calls of each, their ratio, and the compiled mel's
SNR against the eager one (inductor sums in another order: finite, far above 100 dB). A last line per round
runs the widest window as the vocoder's row threads do a batch: its rows split in two halves on two Python
threads, eager against compiled (the compiled kernels let the GIL go, so the halves overlap).
"""

from __future__ import annotations

import math
import time
from functools import partial


def main() -> None:
    from token2wav_parts import window_arguments

    args = window_arguments(__doc__, "1x72,1x130,4x168,8x264")

    import torch
    from token2wav_parts import best_ms, in_two_halves, load_parts

    from omni_cli.backends.hf import dit as ditmod
    from omni_cli.backends.hf.dit_compile import DiTCompile

    t2w = load_parts(args.checkpoint)
    dit, blocked_from = t2w.dit, 5  # the card's dit_block_attention_from
    steps = ditmod.TimeModulation(dit, t2w.settings, torch.device("cpu"), torch.float32)
    compiled = DiTCompile()
    start = time.perf_counter()
    compiled.warm(dit, t2w.cond, t2w.features, t2w.settings, steps, blocked_from)
    print(f"compiled at load in {time.perf_counter() - start:.1f} s (kernels let the GIL go: "
          f"{compiled.threads_overlap})", flush=True)
    windows = args.windows

    def window(rows: int, frames: int):
        codes = torch.randint(0, dit.config.num_embeds, (rows, frames // dit.repeats),
                              generator=torch.Generator().manual_seed(2))
        noise = torch.randn(rows, frames, t2w.mel_dim, generator=torch.Generator().manual_seed(3))

        def run(form: DiTCompile | None, first: int = 0, last: int = rows):
            return ditmod.sample_window(dit, noise[first:last], codes[first:last], t2w.cond.expand(last - first, -1),
                                        t2w.features, t2w.settings, steps, blocked_from, form)
        return run

    with torch.no_grad():
        for round_ in range(1, args.rounds + 1):
            for rows, frames in windows:
                run = window(rows, frames)
                eager, made = run(None), run(compiled)
                error = float(((made - eager) ** 2).sum())
                snr = math.inf if error == 0 else 10 * math.log10(float((eager ** 2).sum()) / error)
                before = best_ms(partial(run, None), args.repeats)
                after = best_ms(partial(run, compiled), args.repeats)
                print(f"round {round_}  DiT {rows} x {frames:3d} frames  eager {before:7.1f} ms  compiled "
                      f"{after:7.1f} ms  ratio {after / before:4.2f}  SNR {snr:5.1f} dB", flush=True)
            rows, frames = max(windows)
            if rows > 1:
                run = window(rows, frames)
                before = best_ms(partial(in_two_halves, partial(run, None), rows), args.repeats)
                after = best_ms(partial(in_two_halves, partial(run, compiled), rows), args.repeats)
                print(f"round {round_}  DiT {rows} x {frames:3d} frames in two threads  eager {before:7.1f} ms  "
                      f"compiled {after:7.1f} ms  ratio {after / before:4.2f}", flush=True)


if __name__ == "__main__":
    main()
