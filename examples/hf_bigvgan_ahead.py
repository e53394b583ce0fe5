"""BigVGAN with its activations compiled ahead of time (`bigvgan_ahead_of_time: true`) against the eager chains.

    python -m omni_cli.backends.hf.tiny ./tiny-omni
    python examples/hf_bigvgan_ahead.py ./tiny-omni [--rounds 2] [--repeats 3] [--calls 1x40,1x88,8x240]

It first loads the compiled activation as the vocoder does (`bigvgan_aot.load_or_build`: from omni_cli's cache,
or built now, about 15 s the first time on a machine) and prints how long that took and where the file is.
Then, for each call (ROWSxFRAMES: rows of mel, mel frames; 1 x 40 is a first chunk of 12 codes and its
overlap), one round runs BigVGAN over the same mel with the eager chains and with the compiled activations,
one thread each, and prints the best of `--repeats` timed calls, their ratio, and the compiled samples' SNR
against the eager ones (finite, far above 100 dB). A last line per round runs the widest call as the
vocoder's row threads do a batch: its rows in two halves on two Python threads (the compiled file lets the GIL
go, so the halves overlap).
"""

from __future__ import annotations

import argparse
import math
import time
from functools import partial


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkpoint")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--calls", default="1x40,1x88,8x240", help="comma-separated ROWSxFRAMES")
    args = parser.parse_args()
    calls = [tuple(int(n) for n in call.split("x")) for call in args.calls.split(",")]

    import torch
    from token2wav_parts import best_ms, in_two_halves, load_parts

    from omni_cli.backends.hf import bigvgan_aot
    from omni_cli.backends.hf.bigvgan import LeanBigVGAN

    t2w = load_parts(args.checkpoint)
    eager, compiled = LeanBigVGAN(t2w.bigvgan), LeanBigVGAN(t2w.bigvgan)
    built: list[str] = []
    start = time.perf_counter()
    file = bigvgan_aot.load_or_build(eager.post, 1, lambda path: built.append(str(path)), models=2)
    compiled.use(lambda act: bigvgan_aot.CompiledActivation(act, file))
    print(f"{'built and loaded' if built else 'loaded'} in {time.perf_counter() - start:.1f} s: {file.path}",
          flush=True)

    with torch.no_grad():
        for round_ in range(1, args.rounds + 1):
            for rows, frames in calls:
                mel = torch.randn(rows, t2w.mel_dim, frames, generator=torch.Generator().manual_seed(frames)) * 3 - 4
                reference, made = eager(mel), compiled(mel)
                error = float(((made.double() - reference.double()) ** 2).sum())
                snr = math.inf if error == 0 else 10 * math.log10(float((reference.double() ** 2).sum()) / error)
                before, after = best_ms(partial(eager, mel), args.repeats), best_ms(partial(compiled, mel), args.repeats)
                print(f"round {round_}  BigVGAN {rows} x {frames:3d} frames  eager {before:7.1f} ms  ahead of time "
                      f"{after:7.1f} ms  ratio {after / before:4.2f}  SNR {snr:5.1f} dB", flush=True)
            rows, frames = max(calls)
            if rows > 1:
                mel = torch.randn(rows, t2w.mel_dim, frames, generator=torch.Generator().manual_seed(frames)) * 3 - 4
                def rows_of(model, first: int, last: int, mel=mel) -> None:
                    model(mel[first:last])

                before = best_ms(partial(in_two_halves, partial(rows_of, eager), rows), args.repeats)
                after = best_ms(partial(in_two_halves, partial(rows_of, compiled), rows), args.repeats)
                print(f"round {round_}  BigVGAN {rows} x {frames:3d} frames in two threads  eager {before:7.1f} ms  "
                      f"ahead of time {after:7.1f} ms  ratio {after / before:4.2f}", flush=True)


if __name__ == "__main__":
    main()
