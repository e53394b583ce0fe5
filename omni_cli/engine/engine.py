"""The engine: admits requests, and each tick runs every ready WorkUnit, batched by key."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterator

from ..loops import Wait, WorkPlan
from ..program import CompiledProgram
from ..spec import SpeakRequest
from ..spec.stream import AudioChunk, RequestDone, RequestStatus, StreamEvent
from .admission import AdmissionError, MemoryBudget, mib
from .request import EngineRequest, RequestHandle
from .scheduler import POLICIES, Entry, group_plans, order_groups
from .stats import EngineStats
from .trace import RequestEvent, TraceEvent, WorkUnitEvent


def _try(fn, *args) -> Exception | None:
    try:
        fn(*args)
    except Exception as exc:
        return exc
    return None


def one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if isinstance(exc, (ValueError, RuntimeError, OSError)) else f"{type(exc).__name__}: {text}"


class Engine:
    def __init__(self, program: CompiledProgram, *, policy: str = "latency-first", memory_budget_bytes: int | None = None,
                 max_batch: int | None = None, clock: Callable[[], float] = time.perf_counter):
        if policy not in POLICIES:
            raise ValueError(f"unknown policy {policy!r} (known: {', '.join(POLICIES)})")
        card = program.card
        self.program = program
        self.policy = policy
        self.max_batch = max_batch or card.batching.max_batch
        self.budget = MemoryBudget(memory_budget_bytes or card.limits.memory_budget_mib << 20)
        self.sample_rate = card.sample_rate
        self.stats = EngineStats()
        self._clock = clock
        self._t0 = clock()
        self._count = 0
        self._requests: dict[str, EngineRequest] = {}
        self._queued: deque[EngineRequest] = deque()
        self._running: list[EngineRequest] = []
        self._events: deque[StreamEvent] = deque()
        self._stash: dict[str, deque[StreamEvent]] = {}
        self._subscribers: list[Callable[[TraceEvent], None]] = []
        self._cancels: set[str] = set()  # cancelled, to be reaped at the next step boundary

    # public API
    def subscribe(self, fn: Callable[[TraceEvent], None]) -> None:
        """`fn(event)` for every trace event, as it happens (WorkUnits and request phases)."""
        self._subscribers.append(fn)

    def now(self) -> float:
        return self._clock() - self._t0

    def submit(self, request: SpeakRequest, *, collect: bool = False) -> RequestHandle:
        """Wire a request and queue it. Raises SpecError for bad input, AdmissionError if it can never fit."""
        self._count += 1
        rid = request.request_id or f"r{self._count}"
        if rid in self._requests:
            raise ValueError(f"request id {rid!r} is already in use")
        holder: list[EngineRequest] = []
        wired = self.program.wire(rid, request, lambda event: self._emit(holder[0], event))
        r = EngineRequest(rid, request, wired, collect, self.now())
        holder.append(r)
        r.peak_step_bytes = max((loop.peak_step_bytes(state) for loop, state in wired.states), default=0)
        need = wired.resident_bytes + r.peak_step_bytes
        if need > self.budget.capacity:
            raise AdmissionError(f"request {rid} needs {mib(need)} ({mib(wired.resident_bytes)} resident + "
                                 f"{mib(r.peak_step_bytes)} per step), over the {mib(self.budget.capacity)} memory budget")
        self._requests[rid] = r
        self._queued.append(r)
        self._trace(RequestEvent(rid, "submitted", r.submitted_s))
        return RequestHandle(self, r)

    def cancel(self, request_id: str) -> None:
        """Cancel at the next step boundary: the request releases everything and its stream ends."""
        r = self._requests.get(request_id)
        if r is not None and not r.status.is_done:
            r.cancel_requested = True
            self._cancels.add(request_id)

    def cancel_all(self) -> None:
        for rid in list(self._requests):
            self.cancel(rid)

    @property
    def is_idle(self) -> bool:
        return not self._running and not self._queued

    @property
    def num_active(self) -> int:
        return len(self._running) + len(self._queued)

    def events(self) -> Iterator[StreamEvent]:
        """Drive the engine until idle, yielding every request's events in the order they happen."""
        while True:
            yield from self.poll()
            if self.is_idle:
                return
            self.step()

    def poll(self) -> list[StreamEvent]:
        """The events produced so far and not yet read, without driving the engine."""
        out: list[StreamEvent] = []
        for waiting in self._stash.values():  # drained in place: a stream_of reader keeps its deque
            out.extend(waiting)
            waiting.clear()
        out.extend(self._events)
        self._events.clear()
        return out

    def stream_of(self, request_id: str) -> Iterator[StreamEvent]:
        """Drive the engine, yielding one request's events; other requests' events wait for their readers."""
        mine = self._stash.setdefault(request_id, deque())
        while True:
            while mine:
                event = mine.popleft()
                yield event
                if isinstance(event, RequestDone):
                    return
            while self._events:
                event = self._events.popleft()
                self._stash.setdefault(event.request_id, deque()).append(event)
            if mine:
                continue
            if self._requests[request_id].status.is_done or self.is_idle:
                return
            self.step()

    # one tick
    def step(self) -> None:
        start = self._clock()
        if self._cancels:
            self._reap_cancelled()
        if self._queued:
            self._admit()
        if self.policy == "round-robin" and len(self._running) > 1:
            self._running.append(self._running.pop(0))  # a different request goes first each tick
        entries: list[Entry] = []
        waits: list[tuple[EngineRequest, str, Wait]] = []
        for r in list(self._running):
            pending = False
            for loop, state in r.wired.states:
                try:
                    nxt = loop.next(state)
                except Exception as exc:  # a bad input or a broken feed fails this request alone
                    self._fail(r, f"{loop.loop_id}: {one_line(exc)}")
                    break
                if nxt.__class__ is WorkPlan:
                    entries.append(Entry(nxt, loop.stage, r, loop, state))
                    pending = True
                elif nxt.__class__ is Wait:
                    waits.append((r, loop.loop_id, nxt))
                    pending = True
            else:
                if not pending:
                    self._finish(r)
        if not entries and self._running:
            # every loop waits on another: a broken program, never a reason to spin forever
            why = "; ".join(f"{r.request_id}/{loop_id}: {w.reason}" for r, loop_id, w in waits[:3])
            for r in list(self._running):
                self._fail(r, f"stalled, no loop can run ({why})")
        for group in order_groups(group_plans(entries, self.max_batch), self.policy):
            self._run_group(group.entries)
        self.stats.ticks += 1
        self.stats.tick_s += self._clock() - start

    def _run_group(self, entries: list[Entry]) -> None:
        running = RequestStatus.RUNNING
        live = [e for e in entries if e.request.status is running and not e.request.cancel_requested]
        if not live:
            return
        need = live[0].plan.step_bytes if len(live) == 1 else sum([e.plan.step_bytes for e in live])
        if not self.budget.try_reserve(need):
            if len(live) == 1:
                self._fail(live[0].request, f"step needs {mib(need)} but only {mib(self.budget.free)} "
                                            f"of {mib(self.budget.capacity)} is free")
                return
            half = len(live) // 2  # smaller batches fit: admission left room for any single step
            self._run_group(live[:half])
            self._run_group(live[half:])
            return
        t = self._clock()
        try:
            outputs = live[0].loop.component.run(live[0].plan.kind, [e.plan.inputs for e in live])
        except Exception as exc:
            if len(live) == 1:
                self._fail(live[0].request, f"{live[0].loop.loop_id}: {one_line(exc)}")
                return
            for entry in live:  # find the request that broke the batch; the others go on unchanged
                self._run_group([entry])
            return
        finally:
            dur = self._clock() - t
            self.stats.component_s += dur
            self.budget.release(need)
        if len(outputs) != len(live):  # a broken component: its batch fails, the engine goes on
            for entry in live:
                self._fail(entry.request, f"{entry.loop.loop_id}: component returned {len(outputs)} outputs for {len(live)}")
            return
        stats = self.stats
        stats.batched_calls += 1
        loop = live[0].loop
        loop_id = loop.loop_id
        # a component may hand back an exception in place of one request's output: that request fails
        # alone (the others' steps already ran and must not be run again)
        if any(isinstance(o, Exception) for o in outputs):
            for entry, o in zip(live, outputs, strict=True):
                if isinstance(o, Exception):
                    self._fail(entry.request, f"{loop_id}: {one_line(o)}")
            kept = [(e, o) for e, o in zip(live, outputs, strict=True) if not isinstance(o, Exception)]
            live, outputs = [e for e, _ in kept], [o for _, o in kept]
        items = [(e.state, e.plan, o) for e, o in zip(live, outputs, strict=True)]
        try:
            advance_many = getattr(loop, "advance_many", None)
            if advance_many is not None:
                errors = advance_many(items)
            else:
                errors = [_try(loop.advance, *item) for item in items]
        except Exception as exc:  # the batch's shared part (e.g. sampling) broke: fail each of its requests
            errors = [exc] * len(items)
        subscribers = self._subscribers
        for entry, error in zip(live, errors, strict=True):
            r = entry.request
            if error is not None:
                self._fail(r, f"{loop_id}: {one_line(error)}")
                continue
            r.units[loop_id] += 1
            stats.work_units += 1
            if subscribers:  # building the event costs more than the bookkeeping around it
                plan = entry.plan
                self._trace(WorkUnitEvent(r.request_id, loop_id, plan.kind, plan.step, len(live),
                                          t - self._t0, dur, loop.stage))

    # request lifecycle
    def _admit(self) -> None:
        while self._queued:
            r = self._queued[0]
            headroom = max([r.peak_step_bytes] + [x.peak_step_bytes for x in self._running])
            resident = r.wired.resident_bytes
            if self.budget.reserved + resident + headroom > self.budget.capacity:
                return  # waits for running requests to finish and refund
            self.budget.try_reserve(resident)
            r.reserved_bytes = resident
            r.status = RequestStatus.RUNNING
            self._queued.popleft()
            self._running.append(r)
            self._trace(RequestEvent(r.request_id, "admitted", self.now(), {"reserved_bytes": resident}))

    def _reap_cancelled(self) -> None:
        for rid in sorted(self._cancels):
            self._end(self._requests[rid], RequestStatus.CANCELLED, None)
        self._cancels.clear()

    def _finish(self, r: EngineRequest) -> None:
        for loop, state in r.wired.states:
            loop.finalize(state)
        self._end(r, RequestStatus.FINISHED, None)

    def _fail(self, r: EngineRequest, error: str) -> None:
        self._end(r, RequestStatus.FAILED, error)

    def _end(self, r: EngineRequest, status: RequestStatus, error: str | None) -> None:
        if r.status.is_done:
            return
        try:
            if status is not RequestStatus.FINISHED:
                for loop, state in r.wired.states:
                    loop.abort(state)
        finally:
            self.budget.release(r.reserved_bytes)
            r.reserved_bytes = 0
            if r in self._running:
                self._running.remove(r)
            if r in self._queued:
                self._queued.remove(r)
            r.status, r.error, r.finished_s = status, error, self.now()
            metrics = r.metrics(self.sample_rate)
            detail = {**metrics, "error": error} if error else metrics
            self._trace(RequestEvent(r.request_id, status.value, r.finished_s, detail))
            self._events.append(RequestDone(r.request_id, status, error, metrics))

    def _emit(self, r: EngineRequest, event: StreamEvent) -> None:
        r.record(event)
        if isinstance(event, AudioChunk) and r.first_audio_s is None:
            r.first_audio_s = self.now()
            self._trace(RequestEvent(r.request_id, "first_audio", r.first_audio_s))
        self._events.append(event)

    def _trace(self, event: TraceEvent) -> None:
        for fn in self._subscribers:
            fn(event)
