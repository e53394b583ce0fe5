"""A batched vocoder call on one thread against its rows split over two, alternated in one process.

    python -m omni_cli.backends.hf.tiny ./tiny-omni
    python examples/hf_row_threads.py ./tiny-omni [--rounds 2] [--repeats 3] [--threads 2]

The shapes are the vocoder's calls at concurrency 8 on the card (utterances of 200 codes): DiT windows of
72, 168, 264 and 114 frames for 8 rows, and 112 and 264 for 2; BigVGAN over 64, 128, 224 and 80 mel frames
for 8 rows and 224 for 2 (the calls as BigVGAN's 640-frame batches were cut when MIN_ROW_FRAMES was chosen;
examples/hf_bigvgan_batch.py measures how a batch is cut now). Each line is one round of one shape: the best of
`--repeats` timed calls (after one untimed) on one thread and with the rows split over `--threads` Python
threads (`RowThreads`, each with one intra-op thread, as the vocoder runs them), their ratio, the frames
each thread got, and whether the split's output equals the unsplit call's bit for bit (a different batch
height may round differently; the waveform checks judge that). `MIN_ROW_FRAMES` in
`omni_cli/backends/hf/rows.py` is where the ratio crosses 1 on the machine that chose it.
"""

from __future__ import annotations

import argparse
from functools import partial


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkpoint")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--small", action="store_true", help="two small shapes only (a quick check)")
    args = parser.parse_args()

    import torch
    from token2wav_parts import best_ms, load_parts

    from omni_cli.backends.hf import dit as ditmod
    from omni_cli.backends.hf.bigvgan import LeanBigVGAN
    from omni_cli.backends.hf.rows import RowThreads

    t2w = load_parts(args.checkpoint)
    bigvgan, dit, mel_dim = t2w.bigvgan, t2w.dit, t2w.mel_dim
    cond, features, settings = t2w.cond, t2w.features, t2w.settings
    vocode = LeanBigVGAN(bigvgan)
    steps = ditmod.TimeModulation(dit, settings, torch.device("cpu"), torch.float32)
    rows = RowThreads(args.threads, 1)

    def dit_call(rows_: int, frames: int):
        codes = torch.randint(0, dit.config.num_embeds, (rows_, frames // dit.repeats),
                              generator=torch.Generator().manual_seed(2))
        noise = torch.randn(rows_, frames, mel_dim, generator=torch.Generator().manual_seed(3))
        return lambda a, b: ditmod.sample_window(dit, noise[a:b], codes[a:b], cond.expand(b - a, -1), features,
                                                 settings, steps)

    def bigvgan_call(rows_: int, frames: int):
        mel = torch.randn(rows_, mel_dim, frames, generator=torch.Generator().manual_seed(frames)) * 3 - 4
        return lambda a, b: vocode(mel[a:b]).reshape(b - a, -1)

    def split_call(call, parts):
        return torch.cat(rows.map(call, parts))

    shapes = [("dit", 8, 72), ("bigvgan", 8, 64)] if args.small else [
        ("dit", 8, 72), ("dit", 8, 168), ("dit", 8, 264), ("dit", 8, 114), ("dit", 2, 112), ("dit", 2, 264),
        ("bigvgan", 8, 64), ("bigvgan", 8, 128), ("bigvgan", 2, 224), ("bigvgan", 8, 80)]
    with torch.no_grad():
        for round_ in range(1, args.rounds + 1):
            for stage, rows_, frames in shapes:
                call = (dit_call if stage == "dit" else bigvgan_call)(rows_, frames)
                n = min(args.threads, rows_)  # as RowThreads.parts shares rows out, without its frames floor
                bounds = [rows_ * i // n for i in range(n + 1)]
                parts = list(zip(bounds[:-1], bounds[1:], strict=True))
                whole, split = partial(call, 0, rows_), partial(split_call, call, parts)
                same = torch.equal(whole(), split())
                one, many = best_ms(whole, args.repeats), best_ms(split, args.repeats)
                print(f"round {round_}  {stage:7s} {rows_} x {frames:3d} frames  one thread {one:7.1f} ms  "
                      f"{n} threads {many:7.1f} ms  ratio {one / many:4.2f}  "
                      f"{rows_ * frames // n:4d} frames a thread  bit-equal {same}", flush=True)


if __name__ == "__main__":
    main()
