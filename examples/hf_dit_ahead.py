"""The DiT's velocity compiled ahead of time (`dit_ahead_of_time: true`) against eager, alternated in one process.

    python -m omni_cli.backends.hf.tiny ./tiny-omni
    python examples/hf_dit_ahead.py ./tiny-omni [--rounds 2] [--repeats 3] [--windows 1x48,1x168,8x248]

It first loads the compiled files as the vocoder does (`dit_aot.load_or_build`, the card's two forms: from
omni_cli's cache, or built now, tens of seconds each the first time on a machine) and prints how long that took
and where the files are. Then, for each window (ROWSxFRAMES: rows of noise, mel frames; under 5 blocks of 24
frames the whole-window mask form, from 5 blocks the block form), one round runs the card's ODE (36 velocity
evaluations) over the same noise and codes eager and compiled, one thread each, and prints the best of
`--repeats` timed calls of each, their ratio, and the compiled mel's SNR against the eager one (inductor sums
in another order: finite, far above 100 dB).
"""

from __future__ import annotations

import math
import time
from functools import partial


def main() -> None:
    from token2wav_parts import window_arguments

    args = window_arguments(__doc__, "1x48,1x80,1x168,4x96,8x248")

    import torch
    from token2wav_parts import best_ms, load_parts

    from omni_cli.backends.hf import dit as ditmod
    from omni_cli.backends.hf import dit_aot

    t2w = load_parts(args.checkpoint)
    dit, blocked_from = t2w.dit, 5  # the card's dit_block_attention_from
    steps = ditmod.TimeModulation(dit, t2w.settings, torch.device("cpu"), torch.float32)
    built: list[str] = []
    start = time.perf_counter()
    ahead = dit_aot.load_or_build(
        dit, 1, lambda form: dit_aot.example_inputs(dit, t2w.cond, t2w.features, t2w.settings, steps, form),
        dit_aot.forms_for(dit, blocked_from), lambda path: built.append(str(path)), models=2)
    files = ", ".join(str(path) for path in ahead.paths.values())
    print(f"{'built and loaded' if built else 'loaded'} in {time.perf_counter() - start:.1f} s: {files}", flush=True)

    with torch.no_grad():
        for round_ in range(1, args.rounds + 1):
            for rows, frames in args.windows:
                codes = torch.randint(0, dit.config.num_embeds, (rows, frames // dit.repeats),
                                      generator=torch.Generator().manual_seed(2))
                noise = torch.randn(rows, frames, t2w.mel_dim, generator=torch.Generator().manual_seed(3))

                def run(form, noise=noise, codes=codes, rows=rows):
                    return ditmod.sample_window(dit, noise, codes, t2w.cond.expand(rows, -1), t2w.features,
                                                t2w.settings, steps, blocked_from, None, form)

                eager, made = run(None), run(ahead)
                error = float(((made - eager) ** 2).sum())
                snr = math.inf if error == 0 else 10 * math.log10(float((eager ** 2).sum()) / error)
                before = best_ms(partial(run, None), args.repeats)
                after = best_ms(partial(run, ahead), args.repeats)
                print(f"round {round_}  DiT {rows} x {frames:3d} frames  eager {before:7.1f} ms  ahead of time "
                      f"{after:7.1f} ms  ratio {after / before:4.2f}  SNR {snr:5.1f} dB", flush=True)


if __name__ == "__main__":
    main()
