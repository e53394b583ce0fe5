"""When each vocoder chunk reaches a player, beside how much audio the player had left: why a player that
starts at the first audio waits even where audio is made faster than real time.

    python -m omni_cli.backends.hf.tiny ./tiny-omni
    python examples/hf_chunk_cadence.py ./tiny-omni [--concurrency 8] [--placement vocoder=process:2]
                                        [--rounds 2] [--codes 200] [--set KEY=VALUE ...]

Each round runs `--concurrency` greedy chat utterances of `--codes` codes at once, as `omni bench
--reference`'s ours-8 does (`--placement` as there), and prints its RTF p50 and stall max, then one row per
chunk index, medians over the requests: the chunk's audio, when it reached the player after the request's
first audio, how long after the chunk before it came ("gap"), the audio the player still had when it came
("margin"; negative: the player waited that long), and the gap over the chunk before's audio. A chunk comes
in time when that last figure is at most 1. Where chunks double (24, 48, 96 codes), chunk k + 1 holds twice
chunk k's audio: to come in time it must be made at under half real time, whatever the utterance's RTF as a
whole. Where they are small, each call's fixed part decides (the card's 6, 16, 24: docs/performance.md).
"""

from __future__ import annotations

import argparse
import statistics
from collections import defaultdict


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkpoint")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--placement", default="card", help="where ours runs: card, KIND or NAME=KIND,...")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--codes", type=int, default=200)
    parser.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE",
                        help="a card value, as `omni speak --set` takes it (e.g. loops.vocoder.pace=schedule)")
    args = parser.parse_args()

    import omni_cli.bench.workload as workload
    from omni_cli.api import load
    from omni_cli.bench import Workload, greedy_variant, run_workload

    arrivals: dict[int, list[tuple[float, float]]] = defaultdict(list)  # per player: (arrived, audio s)
    heard = workload.PlaybackClock.chunk

    def chunk(self, now: float, duration_s: float) -> None:  # each request's player, as the bench times it
        arrivals[id(self)].append((now, duration_s))
        heard(self, now, duration_s)

    workload.PlaybackClock.chunk = chunk
    from omni_cli.spec.overrides import parse_override

    overrides = dict(parse_override(text) for text in args.sets)
    base = load("qwen2_5_omni", settings={"model_path": args.checkpoint}, overrides=overrides or None)
    program = greedy_variant(base, {"thinker": 12, "talker": args.codes + 1}, talker_min=args.codes)
    work = Workload(num_requests=args.concurrency, text_chars=60, mode="chat", concurrency=args.concurrency,
                    placement=args.placement)
    print(f"{args.concurrency} utterances of {args.codes} codes at once, placement {args.placement}")
    for round_ in range(1, args.rounds + 1):
        arrivals.clear()
        summary = run_workload(program, work, "cadence").summary()
        print(f"round {round_}  RTF p50 {summary['rtf_p50']:.2f}  stall max {summary['stall_max_s']:.3f} s")
        print("   chunk  audio s  arrived s  gap s  margin s  gap / audio before")
        rows: dict[int, list[tuple]] = defaultdict(list)
        for chunks in arrivals.values():
            first = chunks[0][0]
            played_until = first
            for index, (now, audio) in enumerate(chunks):
                if index:
                    before_now, before_audio = chunks[index - 1]
                    rows[index].append((audio, now - first, now - before_now, played_until - now,
                                        (now - before_now) / before_audio))
                else:
                    rows[index].append((audio, 0.0, None, None, None))
                played_until = max(played_until, now) + audio
        for index, seen in sorted(rows.items()):
            audio, arrived = (statistics.median(r[i] for r in seen) for i in (0, 1))
            if index == 0:
                print(f"   {index:5d}  {audio:7.2f}  {arrived:9.2f}      -         -                   -")
                continue
            gap, margin, ratio = (statistics.median(r[i] for r in seen) for i in (2, 3, 4))
            print(f"   {index:5d}  {audio:7.2f}  {arrived:9.2f}  {gap:5.2f}  {margin:8.2f}  {ratio:18.2f}")


if __name__ == "__main__":  # a worker process imports this file again (spawn): only the parent runs it
    main()
