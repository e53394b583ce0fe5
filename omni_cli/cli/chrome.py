"""A trace as Chrome Trace Event JSON (Perfetto, chrome://tracing): a track per loop, a track per request.

A batched call runs several requests' WorkUnits as one span. Drawn as it is, those events would
overlap on their loop's track, which the format forbids unless they nest; so the span is split
evenly between its members (in the order they ran), and each event's args keep the real span.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from .timeline import loop_order, work_units

LOOPS_PID, REQUESTS_PID = 1, 2
US = 1e6


def chrome_trace(records: list[dict[str, Any]]) -> dict[str, Any]:
    loops = loop_order(records)
    tids = {loop: i + 1 for i, loop in enumerate(loops)}
    events: list[dict[str, Any]] = [
        {"ph": "M", "pid": LOOPS_PID, "tid": 0, "name": "process_name", "args": {"name": "loops"}},
        {"ph": "M", "pid": REQUESTS_PID, "tid": 0, "name": "process_name", "args": {"name": "requests"}},
    ]
    for loop, tid in tids.items():
        events.append({"ph": "M", "pid": LOOPS_PID, "tid": tid, "name": "thread_name", "args": {"name": loop}})
        events.append({"ph": "M", "pid": LOOPS_PID, "tid": tid, "name": "thread_sort_index", "args": {"sort_index": tid}})
    batches: dict[tuple[str, float, float], list[dict]] = defaultdict(list)
    for u in work_units(records):
        batches[(u["loop"], u["start_s"], u["dur_s"])].append(u)
    for (loop, start, dur), members in batches.items():
        n = len(members)
        for i, u in enumerate(members):
            ts, end = (start + dur * i / n) * US, (start + dur * (i + 1) / n) * US
            events.append({"ph": "X", "pid": LOOPS_PID, "tid": tids[loop], "name": f"{u['kind']} {u['request_id']}",
                           "cat": u["kind"], "ts": ts, "dur": end - ts,
                           "args": {"request_id": u["request_id"], "step": u["step"], "batch_size": u["batch_size"],
                                    "batch_start_us": start * US, "batch_dur_us": dur * US}})
    events += request_tracks(records)
    return {"traceEvents": events, "displayTimeUnit": "ms",
            "otherData": {k: v for k, v in next((r for r in records if r.get("event") == "run"), {}).items()
                          if isinstance(v, (str, int, float))}}


def request_tracks(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per request a track: one span from submission to its end, an instant at first audio."""
    out: list[dict[str, Any]] = []
    tids: dict[str, int] = {}
    starts: dict[str, float] = {}
    for r in records:
        if r.get("event") != "request":
            continue
        rid, phase, t = r["request_id"], r["phase"], r["t_s"] * US
        if rid not in tids:
            tids[rid] = len(tids) + 1
            out.append({"ph": "M", "pid": REQUESTS_PID, "tid": tids[rid], "name": "thread_name", "args": {"name": rid}})
        if phase == "submitted":
            starts[rid] = t
        elif phase == "first_audio":
            out.append({"ph": "i", "s": "t", "pid": REQUESTS_PID, "tid": tids[rid], "name": "first audio", "ts": t})
        elif phase in ("finished", "cancelled", "failed") and rid in starts:
            out.append({"ph": "X", "pid": REQUESTS_PID, "tid": tids[rid], "name": f"{rid} {phase}", "cat": "request",
                        "ts": starts[rid], "dur": t - starts[rid], "args": r.get("detail") or {}})
    return out
