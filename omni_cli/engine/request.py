"""One request inside the engine: its wiring, its status, what it streamed, its metrics."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ..loops import LoopResult
from ..program import WiredRequest
from ..spec import SpeakRequest
from ..spec.stream import AudioChunk, RequestStatus, TextPiece

if TYPE_CHECKING:
    from .engine import Engine


@dataclass
class RequestResult:
    """Everything a finished request produced (kept only when submitted with collect=True)."""

    request_id: str
    status: RequestStatus
    text: str
    tokens: dict[str, list[int]]  # per AR loop
    samples: np.ndarray  # float32, all chunks joined
    sample_rate: int
    error: str | None = None
    loops: dict[str, LoopResult] = field(default_factory=dict)  # each loop's finalize(), in cascade order


@dataclass
class EngineRequest:
    request_id: str
    spec: SpeakRequest
    wired: WiredRequest | None  # released when the request ends: its states hold caches and hidden states
    collect: bool
    submitted_s: float
    resident_bytes: int = 0  # its footprint (WiredRequest.footprint, sized once at wiring)
    peak_step_bytes: int = 0
    status: RequestStatus = RequestStatus.QUEUED
    reserved_bytes: int = 0
    cancel_requested: bool = False
    error: str | None = None
    first_audio_s: float | None = None
    finished_s: float | None = None
    audio_samples: int = 0
    units: Counter = field(default_factory=Counter)  # WorkUnits per loop
    pacing: dict = field(default_factory=dict)  # per paced loop id: the scheduler's PaceRecord (engine/pacing.py)
    text: list[str] = field(default_factory=list)
    chunks: list[np.ndarray] = field(default_factory=list)
    results: dict[str, LoopResult] = field(default_factory=dict)  # kept only with collect

    def record(self, event: Any) -> None:
        if isinstance(event, AudioChunk):
            self.audio_samples += event.num_samples
            if self.collect:
                self.chunks.append(event.samples)
        elif isinstance(event, TextPiece) and self.collect:
            self.text.append(event.text)

    def end_loops(self, finished: bool, results: dict[str, LoopResult]) -> None:
        """Each loop's finalize (after its abort unless the request finished) into `results`, as far as it gets."""
        for loop, state in self.wired.states:
            if not finished:
                loop.abort(state)
            results[loop.loop_id] = loop.finalize(state)

    def metrics(self, sample_rate: int, results: dict[str, LoopResult]) -> dict[str, Any]:
        end = self.finished_s if self.finished_s is not None else self.submitted_s
        ttfa = None if self.first_audio_s is None else self.first_audio_s - self.submitted_s
        return {
            "ttfa_s": ttfa,
            "latency_s": end - self.submitted_s,
            "audio_s": self.audio_samples / sample_rate,
            "num_samples": self.audio_samples,
            "work_units": dict(self.units),
            "stop_reasons": {name: r.stop_reason for name, r in results.items() if r.stop_reason is not None},
            # loops that stopped at a cap rather than at their natural end: no silent truncation
            "truncated": {name: r.stop_reason for name, r in results.items() if r.truncated},
            # inputs an input loop took from the request's store of encodings instead of running WorkUnits
            "reused": _summed(r.outputs.get("reused") or {} for r in results.values()),
            "notes": [note for r in results.values() for note in r.outputs.get("notes", ())],
        }


def _summed(counts) -> dict[str, Any]:
    total: dict[str, Any] = {}
    for count in counts:
        for key, value in count.items():
            total[key] = total.get(key, 0) + value
    return total


class RequestHandle:
    """What `Engine.submit` returns: the request's id, its status, its stream, its result."""

    def __init__(self, engine: Engine, request: EngineRequest):
        self._engine = engine
        self._request = request
        self.request_id = request.request_id

    @property
    def status(self) -> RequestStatus:
        return self._request.status

    def cancel(self) -> None:
        self._engine.cancel(self.request_id)

    def stream(self):
        """Drive the engine and yield this request's events (text, audio, its end) as they happen."""
        return self._engine.stream_of(self.request_id)

    def result(self) -> RequestResult:
        """Run the engine until this request is done; the outputs need submit(..., collect=True)."""
        for _ in self.stream():
            pass
        r = self._request
        tokens = {name: list(res.outputs["tokens"]) for name, res in r.results.items() if "tokens" in res.outputs}
        samples = np.concatenate(r.chunks) if r.chunks else np.zeros(0, np.float32)
        rate = self._engine.sample_rate
        return RequestResult(r.request_id, r.status, "".join(r.text), tokens, samples, rate, r.error, dict(r.results))
