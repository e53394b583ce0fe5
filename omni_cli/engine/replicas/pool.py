"""N whole engines (replicas) behind the calls the CLI makes on one: submit, events, cancel_all, close.

A job bigger than one engine (a book, a rollout set) spreads its utterances over replicas, each a
worker process or a Ray actor with its own copy of the model. The pool checks every request here,
as one engine would, numbers it, gives it to the replica with the fewest requests, and hands back
every replica's stream events as they arrive; the caller writes them, so the files are the same,
byte for byte, as one engine's (each request's output depends on its text and seed, not on where
or beside what it ran: the serial ≡ interleaved gate). A replica that dies fails its own requests
with one line; the others go on.
"""

from __future__ import annotations

import dataclasses
import time
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, wait
from typing import Any

from ...spec import SpeakRequest
from ...spec.stream import RequestDone, RequestStatus, StreamEvent
from ..executors.failures import WorkerDied
from ..trace import RequestEvent, TraceEvent, WorkUnitEvent
from .server import CANCEL_ALL, SUBMIT, Report

EXCHANGE_BUDGET_S = 0.05  # a replica runs this long per exchange: events come back in batches this fresh


@dataclasses.dataclass(frozen=True)
class PoolHandle:
    request_id: str
    replica: int


class ReplicaPool:
    def __init__(self, program: Any, replicas: list, clock_origins: list[float], policy: str):
        self.program = program  # compiled here too: the checks a request meets before it is given out
        self.policy = policy
        self.sample_rate = program.card.sample_rate
        self.replicas = replicas
        self._t0 = time.perf_counter()
        self._shift_s = [origin - self._t0 for origin in clock_origins]  # replica clock -> pool clock
        self._pending: list[list[tuple[str, Any]]] = [[] for _ in replicas]  # commands not sent yet
        self._active: list[dict[str, None]] = [{} for _ in replicas]  # request ids, in submission order
        self._dead: list[str | None] = [None] * len(replicas)
        self._in_flight: dict[Future[Report], int] = {}
        self._ready: deque[StreamEvent] = deque()
        self._subscribers: list[Callable[[TraceEvent], None]] = []
        self._cancel_requested = False
        self._count = 0

    def now(self) -> float:
        return time.perf_counter() - self._t0

    def subscribe(self, fn: Callable[[TraceEvent], None]) -> None:
        self._subscribers.append(fn)

    def submit(self, request: SpeakRequest) -> PoolHandle:
        """Check and number a request, then queue it for the least busy live replica.
        Raises SpecError for a bad request (as one engine would), WorkerDied when no replica is left."""
        self._count += 1
        rid = request.request_id or f"r{self._count}"
        self.program.wire(rid, request, _drop)  # the engine's own checks, here, before it is given out
        live = [i for i, dead in enumerate(self._dead) if dead is None]
        if not live:
            raise WorkerDied(f"no replica is left to run line {self._count}: {'; '.join(filter(None, self._dead))}")
        index = min(live, key=lambda i: (len(self._active[i]), i))
        self._active[index][rid] = None
        self._pending[index].append((SUBMIT, dataclasses.replace(request, request_id=rid)))
        return PoolHandle(rid, index)

    def cancel_all(self) -> None:
        """Only sets a flag (a signal handler calls it): the next exchanges carry the cancellation."""
        self._cancel_requested = True

    @property
    def is_idle(self) -> bool:
        return not self._in_flight and not any(self._active) and not self._ready

    @property
    def num_active(self) -> int:
        return sum(len(active) for active in self._active)

    def events(self) -> Iterator[StreamEvent]:
        """Drive every replica until all are idle, yielding their events as each exchange returns."""
        while True:
            while self._ready:
                yield self._ready.popleft()
            if self.is_idle:
                return
            self._launch()
            if self._in_flight:
                done, _ = wait(list(self._in_flight), return_when=FIRST_COMPLETED)
                for future in done:
                    self._collect(self._in_flight.pop(future), future)

    def kill(self, index: int) -> None:
        """Tests: end one replica now, as a crash would."""
        self.replicas[index].kill()

    def close(self) -> None:
        """Cancel what runs, collect what is in flight, and stop every replica."""
        self.cancel_all()
        try:
            for _ in self.events():
                pass
        finally:
            close_replicas(self.replicas)

    def _launch(self) -> None:
        cancel, self._cancel_requested = self._cancel_requested, False
        busy = set(self._in_flight.values())
        for i, replica in enumerate(self.replicas):
            if cancel and self._active[i]:
                self._pending[i].append((CANCEL_ALL, None))
            if i in busy or not self._active[i] or self._dead[i] is not None:
                continue
            commands, self._pending[i] = self._pending[i], []
            self._in_flight[replica.exchange(commands, EXCHANGE_BUDGET_S)] = i

    def _collect(self, index: int, future: Future[Report]) -> None:
        try:
            report = future.result()
        except Exception as exc:
            self._lose(index, self.replicas[index].describe(exc))
            return
        for event in report.events:
            if isinstance(event, RequestDone):
                self._active[index].pop(event.request_id, None)
        self._ready.extend(report.events)
        shift = self._shift_s[index]
        for trace in report.traces:
            if isinstance(trace, WorkUnitEvent):
                trace = dataclasses.replace(trace, start_s=trace.start_s + shift)
            elif isinstance(trace, RequestEvent):
                trace = dataclasses.replace(trace, t_s=trace.t_s + shift)
            self._trace(trace)

    def _lose(self, index: int, error: str) -> None:
        """A replica died or broke: each request it had fails with the reason; it gets no more."""
        self._dead[index] = error
        self._pending[index].clear()
        failed, self._active[index] = list(self._active[index]), {}
        for rid in failed:
            self._trace(RequestEvent(rid, RequestStatus.FAILED.value, self.now(), {"error": error}))
            self._ready.append(RequestDone(rid, RequestStatus.FAILED, error, {}))

    def _trace(self, event: TraceEvent) -> None:
        for fn in self._subscribers:
            fn(event)


def close_replicas(replicas: list) -> None:
    """Stop each replica; a local Ray that omni started for them goes with the last."""
    for replica in replicas:
        replica.close()
    if any(replica.kind == "ray" for replica in replicas):
        from ..executors.ray import shutdown_ray

        shutdown_ray()


def _drop(event: StreamEvent) -> None:
    """A checked request's events go nowhere: it runs on a replica."""
