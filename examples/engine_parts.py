"""Where the engine's own time goes, per WorkUnit: scheduling, each loop kind's `next` and `advance_many`
(sampling included), and the rest (reserving, folding, events), beside the component time of the same run.

    python examples/engine_parts.py            # toy card, 8 utterances of ~60 characters, concurrency 1 and 8

Each part is timed by wrapping it (a few perf_counter calls per WorkUnit, counted in the parts), so the
figures are for finding what to change, not a benchmark: `omni bench` gives the overhead share itself.
"""

from __future__ import annotations

import sys
import time
from collections import Counter

from omni_cli.api import load
from omni_cli.bench import Workload, run_workload
from omni_cli.engine.scheduler import Scheduler
from omni_cli.loops import LOOP_KINDS

SPENT: Counter = Counter()


def timed(cls: type, name: str, label: str) -> None:
    inner = getattr(cls, name)

    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        try:
            return inner(*args, **kwargs)
        finally:
            SPENT[label] += time.perf_counter() - start

    setattr(cls, name, wrapper)


def main() -> int:
    program = load("qwen2_5_omni_toy")
    timed(Scheduler, "schedule", "schedule (loop next() included)")
    for kind in sorted({type(loop).kind for loop in program.loops.values()}):
        cls = LOOP_KINDS[kind]
        timed(cls, "next", f"  {kind}.next")
        timed(cls, "advance_many", f"{kind}.advance_many")
    run_workload(program, Workload(num_requests=2, text_chars=60, concurrency=1))  # warm-up
    for concurrency in (1, 8):
        SPENT.clear()
        result = run_workload(program, Workload(num_requests=8, text_chars=60, concurrency=concurrency))
        units, overhead = result.work_units, result.overhead_s
        other = result.wall_s - overhead
        print(f"concurrency {concurrency}: {units} WorkUnits, engine {overhead * 1e6 / units:.1f} us/WU "
              f"({overhead / result.wall_s:.1%} of the wall time); components and the driver's loop "
              f"{other * 1e6 / units:.1f} us/WU")
        outside = overhead - sum(s for label, s in SPENT.items() if not label.startswith("  "))
        # schedule first with the next() calls it makes indented under it, then the folds
        order = sorted(SPENT, key=lambda label: (0 if label.startswith("schedule") else 1 if label.startswith("  ")
                                                 else 2, label))
        for label in order:
            print(f"  {label:40s} {SPENT[label] * 1e6 / units:7.1f} us/WU")
        print(f"  {'the rest (reserve, fold, events, stats)':40s} {outside * 1e6 / units:7.1f} us/WU")
    return 0


if __name__ == "__main__":
    sys.exit(main())
