"""A trace as Chrome Trace Event JSON (Perfetto, chrome://tracing): a track per loop, a track per request.

A batched call runs several requests' WorkUnits as one span. Drawn as it is, those events would
overlap on their loop's track, which the format forbids unless they nest; so the span is split
evenly between its members (in the order they ran), and each event's args keep the real span.
The engine traces a batch's members one after another, so a batch is a run of WorkUnits with the
same loop, start and duration; the export streams, holding one batch and one entry per request.
Every number is finite (the reader refuses NaN and Infinity) and is written with `allow_nan=False`,
so the output is strict JSON (never a bare NaN).
"""

from __future__ import annotations

import json
from typing import Any, TextIO

from .trace_digest import END_PHASES, TraceDigest
from .trace_reader import iter_trace

LOOPS_PID, REQUESTS_PID = 1, 2
US = 1e6


def write_chrome(path: str, digest: TraceDigest, out: TextIO) -> None:
    """Write the trace at `path` (already read once into `digest`: its loops, its records checked) to `out`."""
    writer = _EventWriter(out)
    tids = {loop: i + 1 for i, loop in enumerate(digest.loop_order())}
    writer.emit({"ph": "M", "pid": LOOPS_PID, "tid": 0, "name": "process_name", "args": {"name": "loops"}})
    writer.emit({"ph": "M", "pid": REQUESTS_PID, "tid": 0, "name": "process_name", "args": {"name": "requests"}})
    for loop, tid in tids.items():
        writer.emit({"ph": "M", "pid": LOOPS_PID, "tid": tid, "name": "thread_name", "args": {"name": loop}})
        writer.emit({"ph": "M", "pid": LOOPS_PID, "tid": tid, "name": "thread_sort_index", "args": {"sort_index": tid}})
    batch: list[dict[str, Any]] = []
    requests = _RequestTracks(writer)
    records = iter_trace(path)
    for _ in range(digest.num_records):  # the records read the first time, even if the file has grown since
        _, r = next(records)
        if r["event"] == "work_unit" and r["loop"] in tids:
            if batch and _key(batch[0]) != _key(r):
                _emit_batch(writer, batch, tids)
                batch = []
            batch.append(r)
        elif r["event"] == "request":
            requests.add(r)
    records.close()
    _emit_batch(writer, batch, tids)
    run = digest.run or {}
    other = {k: v for k, v in run.items() if isinstance(v, (str, int, float)) and not isinstance(v, bool)}
    writer.finish({"displayTimeUnit": "ms", "otherData": other})


def _key(u: dict[str, Any]) -> tuple[str, float, float]:
    return u["loop"], u["start_s"], u["dur_s"]


def _emit_batch(writer: _EventWriter, members: list[dict[str, Any]], tids: dict[str, int]) -> None:
    n = len(members)
    for i, u in enumerate(members):
        start, dur = float(u["start_s"]), float(u["dur_s"])
        ts, end = (start + dur * i / n) * US, (start + dur * (i + 1) / n) * US
        writer.emit({"ph": "X", "pid": LOOPS_PID, "tid": tids[u["loop"]], "name": f"{u['kind']} {u['request_id']}",
                     "cat": u["kind"], "ts": ts, "dur": end - ts,
                     "args": {"request_id": u["request_id"], "step": u["step"], "batch_size": u["batch_size"],
                              "batch_start_us": start * US, "batch_dur_us": dur * US}})


class _RequestTracks:
    """Per request a track: one span from submission to its end, an instant at first audio."""

    def __init__(self, writer: _EventWriter) -> None:
        self._writer = writer
        self._tids: dict[str, int] = {}
        self._starts: dict[str, float] = {}

    def add(self, r: dict[str, Any]) -> None:
        rid, phase, t = r["request_id"], r["phase"], float(r["t_s"]) * US
        emit = self._writer.emit
        if rid not in self._tids:
            self._tids[rid] = len(self._tids) + 1
            emit({"ph": "M", "pid": REQUESTS_PID, "tid": self._tids[rid], "name": "thread_name", "args": {"name": rid}})
        tid = self._tids[rid]
        if phase == "submitted":
            self._starts[rid] = t
        elif phase == "first_audio":
            emit({"ph": "i", "s": "t", "pid": REQUESTS_PID, "tid": tid, "name": "first audio", "ts": t})
        elif phase in END_PHASES and rid in self._starts:
            emit({"ph": "X", "pid": REQUESTS_PID, "tid": tid, "name": f"{rid} {phase}", "cat": "request",
                  "ts": self._starts[rid], "dur": t - self._starts[rid], "args": r.get("detail") or {}})


class _EventWriter:
    """`{"traceEvents": [` … `], …}` written an event at a time."""

    def __init__(self, out: TextIO) -> None:
        self._out = out
        self._count = 0
        out.write('{"traceEvents": [')

    def emit(self, event: dict[str, Any]) -> None:
        # ASCII: a lone surrogate read from a hand-made trace still makes valid JSON text
        self._out.write(("\n" if not self._count else ",\n") + json.dumps(event, allow_nan=False))
        self._count += 1

    def finish(self, rest: dict[str, Any]) -> None:
        self._out.write("\n], " + json.dumps(rest, allow_nan=False)[1:] + "\n")
