"""What TTFA over the first chunk's critical path is made of: the engine's time before, between and after
the WorkUnits a request's first audio waits on, position by position (concurrency 1, toy card).

    python examples/first_chunk_gaps.py            # 8 utterances of ~60 characters, three runs

Each row is one position in a request's first-chunk window, as `omni bench` counts the path (the
request's own WorkUnits up to and including its first vocoder chunk): the median, over every request of
every run, of the time from the end of the unit before (or from submit) to the start of this one, and
last, from that chunk to the first audio. The sum of the medians is the excess of TTFA over the path.
Read from the trace events of an ordinary run: nothing is wrapped, so the figures are the bench's own.
"""

from __future__ import annotations

import statistics
import sys
from collections import defaultdict

from omni_cli.api import load
from omni_cli.backends.base import AUDIO_CHUNK
from omni_cli.bench import Workload, run_workload

EVENTS: list = []


def windows() -> dict[tuple[int, str], float]:
    """Per (position, what it leads to): each request's gap there, from this run's events."""
    per: dict[str, dict] = defaultdict(lambda: {"units": []})
    for event in EVENTS:
        if event.event == "work_unit":
            per[event.request_id]["units"].append(event)
        else:
            per[event.request_id][event.phase] = event.t_s
    gaps: dict[tuple[int, str], float] = {}
    for rid, seen in per.items():
        end, before = seen["submitted"], "submit"
        for i, unit in enumerate(seen["units"]):
            name = f"{unit.loop}#{unit.step}"
            gaps[(rid, i, f"{before} -> {name}")] = unit.start_s - end
            end, before = unit.start_s + unit.dur_s, name
            if unit.kind == AUDIO_CHUNK:
                gaps[(rid, i + 1, f"{before} -> first audio")] = seen["first_audio"] - end
                break
    return gaps


def main(runs: int = 3) -> int:
    program = load("qwen2_5_omni_toy")
    run_workload(program, Workload(num_requests=2, text_chars=60, concurrency=1), on_event=EVENTS.append)  # warm-up
    by_position: dict[tuple[int, str], list[float]] = defaultdict(list)
    for _ in range(runs):
        EVENTS.clear()
        run_workload(program, Workload(num_requests=8, text_chars=60, concurrency=1), on_event=EVENTS.append)
        for (_, position, what), gap in windows().items():
            by_position[(position, what)].append(gap)
    total = 0.0
    for (position, what), gaps in sorted(by_position.items()):
        median = statistics.median(gaps)
        total += median
        print(f"{position:3d}  {what:44s} {median * 1e6:7.1f} us")
    print(f"sum of the medians: {total * 1e6:.0f} us")
    return 0


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 3))
