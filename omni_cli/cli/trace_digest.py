"""A trace taken in one pass: what the timeline and the Chrome export need, without keeping the records.

Holding every record of a million-record trace as a dict would take gigabytes, so the digest keeps per
WorkUnit only its loop, kind, start and end in flat arrays (18 bytes), per loop and kind the summary
sums, and per request its submission time. Loops and kinds are capped: a trace
naming thousands of them is not one omni wrote, and would draw thousands of lanes.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable
from typing import Any

from .errors import USAGE, CliError

MAX_LOOPS = 64
MAX_KINDS = 16
END_PHASES = ("finished", "cancelled", "failed")


class TraceDigest:
    def __init__(self) -> None:
        self.run: dict[str, Any] | None = None
        self.loop_ids: dict[str, int] = {}  # loop -> index in order of first appearance
        self._loop_rank: dict[str, tuple[int, int]] = {}  # loop -> (stage, first WorkUnit index)
        self.kind_ids: dict[str, int] = {}
        self.unit_loop, self.unit_kind = array("H"), array("B")
        self.unit_start, self.unit_end = array("d"), array("d")
        self.groups: dict[tuple[str, str], list[float]] = {}  # (loop, kind) -> [units, total s, batch sum, batch max]
        self.submitted: dict[str, float] = {}
        self.first_audio: list[tuple[str, float]] = []
        self.end_phases: set[str] = set()
        self.audio_s = 0.0
        self.t_min, self.t_max = float("inf"), float("-inf")
        self.num_records = 0

    @classmethod
    def of(cls, records: Iterable[tuple[str, dict[str, Any]]]) -> TraceDigest:
        """From (`FILE:LINE`, record) pairs (trace_reader.iter_trace), each already checked."""
        digest = cls()
        for where, record in records:
            digest.add(where, record)
        return digest

    def add(self, where: str, r: dict[str, Any]) -> None:
        self.num_records += 1
        event = r["event"]
        if event == "run" and self.run is None:
            self.run = r
        elif event == "work_unit":
            self._add_unit(where, r)
        elif event == "request":
            t = float(r["t_s"])
            self._extend(t, t)
            phase = r["phase"]
            if phase == "submitted":
                self.submitted[r["request_id"]] = t
            elif phase == "first_audio":
                self.first_audio.append((r["request_id"], t))
            elif phase in END_PHASES:
                self.end_phases.add(phase)
                self.audio_s += float((r.get("detail") or {}).get("audio_s", 0.0))

    def _add_unit(self, where: str, u: dict[str, Any]) -> None:
        loop, kind = u["loop"], u["kind"]
        start, dur = float(u["start_s"]), float(u["dur_s"])
        self.unit_loop.append(self.loop_index(where, loop, u.get("stage") or 0))
        self.unit_kind.append(_index(self.kind_ids, kind, MAX_KINDS, where, "kinds of WorkUnit"))
        self.unit_start.append(start)
        self.unit_end.append(start + dur)
        self._extend(start, start + dur)
        group = self.groups.setdefault((loop, kind), [0, 0.0, 0, 0])
        group[0] += 1
        group[1] += dur
        group[2] += u["batch_size"]
        group[3] = max(group[3], u["batch_size"])

    def loop_index(self, where: str, loop: str, stage: int) -> int:
        if loop not in self.loop_ids:
            self._loop_rank[loop] = (stage, len(self.unit_loop))
        return _index(self.loop_ids, loop, MAX_LOOPS, where, "loops")

    def _extend(self, first: float, last: float) -> None:
        self.t_min, self.t_max = min(self.t_min, first), max(self.t_max, last)

    @property
    def num_units(self) -> int:
        return len(self.unit_start)

    def loop_order(self) -> list[str]:
        """Loops by stage (thinker first), then as they first appear; the run record's order wins."""
        ordered = sorted(self._loop_rank, key=lambda loop: self._loop_rank[loop])
        declared = (self.run or {}).get("loops") or []
        return [loop for loop in declared if loop in self._loop_rank] + [x for x in ordered if x not in declared]

    def origin_s(self) -> float:
        """The time axis starts at the first submission or WorkUnit (engine start-up is not the run's)."""
        return self.t_min if self.t_min != float("inf") else 0.0

    def span_s(self) -> float:
        end = self.t_max if self.t_max != float("-inf") else 0.0
        return max(end - self.origin_s(), 1e-9)

    def ttfa_s(self) -> list[float]:
        return [t - self.submitted.get(rid, 0.0) for rid, t in self.first_audio]


def _index(ids: dict[str, int], name: str, cap: int, where: str, what: str) -> int:
    index = ids.get(name)
    if index is None:
        if len(ids) >= cap:
            raise CliError(f"{where}: more than {cap} {what} (not a trace omni wrote)", USAGE)
        index = ids[name] = len(ids)
    return index
