"""A request alone, one after another: how many vocoder calls each utterance took, their time, and its latency.

    python -m omni_cli.backends.hf.tiny ./tiny-omni
    python examples/hf_vocoder_calls.py ./tiny-omni [--utterances 8] [--codes 200] [--set KEY=VALUE ...]

Runs `--utterances` greedy chat utterances of `--codes` codes each through one engine (after one more to warm
up, not counted) and prints the medians over them: vocoder calls (the engine's vocoder WorkUnits), the seconds
those calls took together, and each utterance's latency. Every vocoder call pays for the context its window
reads besides its own codes, so the calls a schedule makes are a cost of their own (docs/performance.md). Then
each call's milliseconds in the process's first utterance (the one that warms up: each chunk size's first call
sets up its shapes) and in its last. `--set` changes a card value as `omni speak --set` does, to compare
schedules.
"""

from __future__ import annotations

import argparse
import statistics
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkpoint")
    parser.add_argument("--utterances", type=int, default=8)
    parser.add_argument("--codes", type=int, default=200)
    parser.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE")
    args = parser.parse_args()

    from omni_cli.api import load
    from omni_cli.bench import greedy_variant
    from omni_cli.engine import Engine, WorkUnitEvent
    from omni_cli.spec import SpeakRequest, SpecError
    from omni_cli.spec.overrides import parse_override

    try:  # a bad --set is one line, as the CLI gives it (exit 2)
        overrides = dict(parse_override(text) for text in args.sets)
        base = load("qwen2_5_omni", settings={"model_path": args.checkpoint}, overrides=overrides or None)
    except SpecError as exc:
        parser.error(exc.one_line())
    program = greedy_variant(base, {"thinker": 12, "talker": args.codes + 1}, talker_min=args.codes)
    engine = Engine(program)
    calls: list[WorkUnitEvent] = []
    engine.subscribe(lambda e: calls.append(e) if isinstance(e, WorkUnitEvent) and e.loop == "vocoder" else None)
    counts, seconds, latencies, each = [], [], [], []
    for index in range(args.utterances + 1):
        calls.clear()
        start = time.perf_counter()
        engine.submit(SpeakRequest("Tell me about the weather in the mountains today, please.", mode="chat",
                                   seed=index)).result()
        each.append(" ".join(f"{e.dur_s * 1000:.0f}" for e in calls))
        if index:  # the first warms up
            latencies.append(time.perf_counter() - start)
            counts.append(len(calls))
            seconds.append(sum(e.dur_s for e in calls))
    print(f"{args.utterances} utterances of {args.codes} codes, one at a time")
    print(f"vocoder calls p50 {statistics.median(counts):g}  vocoder s p50 {statistics.median(seconds):.3f}  "
          f"latency s p50 {statistics.median(latencies):.3f}")
    print(f"each call, ms: the process's first utterance {each[0]}; its last {each[-1]}")


if __name__ == "__main__":
    main()
