"""Batched BigVGAN calls with each row thread's share capped at several sizes, alternated in one process:
the measurement behind the vocoder's `bigvgan_batch_frames`.

    python -m omni_cli.backends.hf.tiny ./tiny-omni
    python examples/hf_bigvgan_batch.py ./tiny-omni [--rounds 2] [--repeats 3] [--caps 240,640,1024,2048]
                                        [--shapes 8x240,8x194,8x88] [--threads 2]

Each shape (ROWSxFRAMES) is a batch the vocoder hands BigVGAN at concurrency 8 on the card: 8 rows of 240 and
194 mel frames (the 112-code first chunk and the 88-code rest, with the overlap BigVGAN reads) and of 88.
For each cap, the rows go through BigVGAN as the vocoder sends them (`token2wav.bigvgan_calls`: as few calls
as keep each row thread within the cap, then `RowThreads.parts` inside each call), and the line gives the best
of `--repeats` timed passes (after one untimed) in milliseconds, with the rows a thread got per call. A
smaller cap pays each operation's fixed cost more often; a larger one makes each thread's working set
outgrow its caches (one row thread, eight rows of 224 frames in one call took 7% longer than two calls of
four on the machine that chose 1024).
"""

from __future__ import annotations

import argparse
from functools import partial


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkpoint")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--caps", default="240,640,1024,2048", help="comma-separated frames a row thread")
    parser.add_argument("--shapes", default="8x240,8x194,8x88", help="comma-separated ROWSxFRAMES")
    parser.add_argument("--threads", type=int, default=2, help="row threads (the vocoder's default: the cores)")
    args = parser.parse_args()
    caps = [int(c) for c in args.caps.split(",")]
    shapes = [tuple(int(n) for n in shape.split("x")) for shape in args.shapes.split(",")]

    import torch
    from token2wav_parts import best_ms, load_parts

    from omni_cli.backends.hf.bigvgan import LeanBigVGAN
    from omni_cli.backends.hf.rows import RowThreads
    from omni_cli.backends.hf.token2wav import bigvgan_calls

    parts_ = load_parts(args.checkpoint)
    vocode = LeanBigVGAN(parts_.bigvgan)
    rows = RowThreads(args.threads, 1)

    def batch(mel: torch.Tensor, cap: int) -> None:
        for first, stop in bigvgan_calls(mel.shape[0], mel.shape[2], cap, rows.count):
            call = mel[first:stop]
            rows.map(lambda a, b, call=call: vocode(call[a:b]), rows.parts("bigvgan", stop - first, mel.shape[2]))

    with torch.no_grad():
        for round_ in range(1, args.rounds + 1):
            for count, frames in shapes:
                mel = torch.randn(count, parts_.mel_dim, frames, generator=torch.Generator().manual_seed(frames)) * 3 - 4
                cells = []
                for cap in caps:
                    plan = bigvgan_calls(count, frames, cap, rows.count)
                    most = max(max(b - a for a, b in rows.parts("bigvgan", stop - first, frames)) for first, stop in plan)
                    cells.append(f"cap {cap:4d}: {best_ms(partial(batch, mel, cap), args.repeats):6.1f} ms "
                                 f"({len(plan)} call{'s' if len(plan) > 1 else ''}, {most} row{'s' if most > 1 else ''} a thread)")
                print(f"round {round_}  {count} x {frames:3d} frames  " + "  ".join(cells), flush=True)


if __name__ == "__main__":
    main()
