"""Trace events: one per WorkUnit and one per request phase, delivered to subscribers as they happen."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(slots=True)
class WorkUnitEvent:  # not frozen: one per WorkUnit whenever anyone subscribes, and frozen costs 5x to build
    request_id: str
    loop: str
    kind: str  # ar_prefill | ar_token | audio_chunk
    step: int
    batch_size: int
    start_s: float  # seconds since the engine started
    dur_s: float  # the batched call's duration (shared by its batch)
    stage: int
    event: str = "work_unit"

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class RequestEvent:
    request_id: str
    phase: str  # submitted | admitted | first_audio | finished | cancelled | failed
    t_s: float
    detail: dict[str, Any] | None = None
    event: str = "request"

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        if out["detail"] is None:
            del out["detail"]
        return out


TraceEvent = WorkUnitEvent | RequestEvent
