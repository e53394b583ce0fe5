"""Engine overhead per WorkUnit of whichever omni_cli is on PYTHONPATH, to compare two trees side by side.

    for tree in /path/to/old /path/to/new; do PYTHONPATH=$tree python examples/engine_overhead.py; done

Runs 8 utterances of ~60 characters at concurrency 1 and 8 through one engine on the toy card, five
times, and prints the best (least disturbed) overhead per WorkUnit of each: the engine's time outside
the components, from its own counters. No trace subscriber, so both trees do the same work.
"""

from __future__ import annotations

import sys

from omni_cli.api import load
from omni_cli.engine import Engine
from omni_cli.spec import SpeakRequest

WORDS = "the quick brown fox jumps over a lazy dog while seven bright stars watch quietly from far above".split()


def text(i: int) -> str:
    return " ".join(WORDS[(i + k) % len(WORDS)] for k in range(12))[:60]


def overhead_us(program, concurrency: int) -> float:
    engine = Engine(program)
    pending = [SpeakRequest(text(i), seed=i, request_id=f"o{i}") for i in range(8)]
    while pending or not engine.is_idle:
        while pending and engine.num_active < concurrency:
            engine.submit(pending.pop(0))
        engine.step()
        engine.poll()
    return engine.stats.overhead_per_unit_s * 1e6


def main() -> int:
    program = load("qwen2_5_omni_toy")
    overhead_us(program, 1)  # warm-up
    best = {c: min(overhead_us(program, c) for _ in range(5)) for c in (1, 8)}
    print(" ".join(f"concurrency-{c}: {us:.1f} us/WU" for c, us in best.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
