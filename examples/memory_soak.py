"""Memory over a long run: N short utterances through one engine, read as they end.

    python examples/memory_soak.py                 # 100,000 utterances (over an hour on 2 cores: ~40 ms each)
    python examples/memory_soak.py --utterances 2000 --every 500
    python examples/memory_soak.py --card qwen2_5_omni --model-path ./tiny-omni \
        --set components.vocoder.params.dit_compile=true --utterances 2000 --every 250

Prints the process's resident memory every `--every` utterances; flat is the goal (the engine keeps no
finished request).
"""

from __future__ import annotations

import argparse
import resource
import sys
import time

from omni_cli.api import load
from omni_cli.engine import Engine
from omni_cli.spec import SpeakRequest, SpecError
from omni_cli.spec.overrides import parse_override


def rss_mib() -> float:
    with open("/proc/self/statm") as f:  # current, not peak (ru_maxrss) resident set
        return int(f.read().split()[1]) * resource.getpagesize() / 2**20


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--utterances", type=int, default=100_000)
    parser.add_argument("--every", type=int, default=10_000)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--card", default="qwen2_5_omni_toy")
    parser.add_argument("--model-path", help="checkpoint directory (hf cards)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="one of the card's values, as `omni speak --set` takes it (repeatable)")
    args = parser.parse_args(argv)
    try:  # a bad --set or card is one line, as the CLI gives it (exit 2)
        overrides = dict(parse_override(text) for text in args.overrides)
        engine = Engine(load(args.card, None, {"model_path": args.model_path} if args.model_path else None, overrides))
    except SpecError as exc:
        parser.error(exc.one_line())
    start, samples = time.perf_counter(), 0
    print("utterances  rss_mib  seconds")
    for i in range(1, args.utterances + 1):
        engine.submit(SpeakRequest(f"line {i % 100}", seed=i % 1000))
        while engine.num_active >= args.concurrency or (i == args.utterances and not engine.is_idle):
            engine.step()
            samples += sum(getattr(e, "num_samples", 0) for e in engine.poll())
        if i % args.every == 0 or i == args.utterances:
            print(f"{i:10d}  {rss_mib():7.1f}  {time.perf_counter() - start:7.1f}", flush=True)
    return 0 if samples > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
