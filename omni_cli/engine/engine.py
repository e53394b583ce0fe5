"""The engine: a Scheduler that decides, an Executor per component that runs, and a short `step`."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import FIRST_COMPLETED, Future, wait
from functools import partial

from ..program import CompiledProgram, WiredRequest
from ..spec import SpeakRequest
from ..spec.stream import AudioChunk, RequestDone, RequestStatus, StreamEvent
from .admission import MemoryBudget
from .events import EventQueue
from .executor import BatchOutcome, Call, Executor, InlineExecutor
from .pacing import Pacer
from .request import EngineRequest, RequestHandle
from .scheduler import Entry, Scheduler, Verdict, one_line
from .stats import EngineStats
from .trace import RequestEvent, TraceEvent, WorkUnitEvent
from .warm_up import warm_up

__all__ = ["Engine", "one_line"]


class Engine:
    def __init__(self, program: CompiledProgram, *, policy: str = "latency-first", memory_budget_bytes: int | None = None,
                 max_batch: int | None = None, executors: Mapping[str, Executor] | None = None):
        """executors: by component name (the card's); a component not named runs inline, in this thread."""
        card = program.card
        self.program = program
        self.policy = policy
        budget = MemoryBudget(memory_budget_bytes or card.limits.memory_budget_mib << 20, program.components.values())
        self.scheduler = Scheduler(policy, max_batch or card.batching.max_batch, budget, Pacer(card.sample_rate))
        self.budget = budget  # the scheduler's, to read (serve's /metrics, bench, tests)
        self.sample_rate = card.sample_rate
        self.stats = EngineStats()
        self._t0 = time.perf_counter()
        self._count = 0
        self._executors: dict[int, Executor] = {id(c): (executors or {}).get(name) or InlineExecutor(c)
                                                for name, c in program.components.items()}
        # the components as the feeds use them (a talker whose thinker's states stay in the workers)
        views = {c.role: self._executors[id(c)].view(c) for c in program.components.values()}
        self._roles = views if any(v is not program.roles.get(r) for r, v in views.items()) else None
        self._requests: dict[str, EngineRequest] = {}  # active only: an ended request is the caller's alone
        self._events = EventQueue()
        self._subscribers: list[Callable[[TraceEvent], None]] = []
        self._cancels: set[str] = set()  # cancelled, to be reaped at the next step boundary
        self._in_flight: dict[Future[BatchOutcome], Call] = {}
        self._busy: set[int] = set()  # components with a call in flight
        self._busy_states: set[int] = set()  # loop states with a step in flight

    # public API
    def subscribe(self, fn: Callable[[TraceEvent], None]) -> None:
        """`fn(event)` for every trace event, as it happens (WorkUnits and request phases)."""
        self._subscribers.append(fn)

    def now(self) -> float:
        return time.perf_counter() - self._t0

    def submit(self, request: SpeakRequest, *, collect: bool = False) -> RequestHandle:
        """Wire a request and queue it. Raises SpecError for bad input, AdmissionError if it can never fit.
        collect: keep its text, tokens and samples for `handle.result()` (else only its metrics)."""
        self._count += 1
        rid = request.request_id or f"r{self._count}"
        if rid in self._requests:
            raise ValueError(f"request id {rid!r} is already in use")
        r = EngineRequest(rid, request, None, collect, 0.0)  # made first: its loops emit through a partial, no lambda
        r.wired = wired = self.program.wire(rid, request, partial(self._emit, r), roles=self._roles)
        r.resident_bytes, r.peak_step_bytes = wired.footprint.resident_bytes, wired.footprint.peak_step_bytes
        r.submitted_s = self.now()
        self.scheduler.add(r)  # AdmissionError if it can never fit
        self._requests[rid] = r
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

    def warm_up(self, text: str = "Hello, this warms the engine up.", audio_chunks: int = 2) -> float:
        """One request made and dropped before real ones (engine/warm_up.py); returns its seconds."""
        return warm_up(self, text, audio_chunks)

    def reset_stats(self) -> None:
        """Count afresh from here: ticks, WorkUnits and times (`stats`), and the peak of the budget's
        reservation (from what is reserved now): a benchmark's timed run after an untimed one on this engine."""
        self.stats = EngineStats()
        self.scheduler.reset_peak()

    def inspect(self, request_id: str) -> WiredRequest | None:
        """Test and debugging hook: an active request's wiring (loop states, slots); None once it ended."""
        r = self._requests.get(request_id)
        return None if r is None else r.wired

    is_idle = property(lambda self: not self._requests and not self._in_flight)
    num_active = property(lambda self: len(self._requests))

    def events(self) -> Iterator[StreamEvent]:
        """Drive the engine until idle, yielding every request's events in the order they happen."""
        while True:
            yield from self.poll()
            if self.is_idle:
                return
            self.step()

    def poll(self) -> list[StreamEvent]:
        """The events produced so far and not yet read, without driving the engine."""
        return self._events.poll()

    def stream_of(self, request_id: str) -> Iterator[StreamEvent]:
        """Drive the engine, yielding one request's events; other requests' events wait for their readers."""
        while True:
            mine, done = self._events.take(request_id)
            yield from mine
            if done or (not mine and (request_id not in self._requests or self.is_idle)):
                return
            if not mine:
                self.step()

    def failures(self) -> list[str]:
        """Why components cannot run any more (a worker process or actor died); empty while all can."""
        return [reason for executor in list(self._executors.values()) if (reason := executor.failure())]

    def close(self) -> None:
        """Cancel what runs, wait for calls in flight, and close the executors."""
        self.cancel_all()
        while not self.is_idle:
            self.step()
        for executor in self._executors.values():
            executor.close()

    # one tick
    def step(self) -> None:
        start = time.perf_counter()
        if self._in_flight:
            self._fold_completed(block=False)
        if self._cancels:
            for rid in sorted(self._cancels):
                self._end(self._requests[rid], RequestStatus.CANCELLED, None)
            self._cancels.clear()
        decision = self.scheduler.schedule(self._busy_states)
        for r in decision.admitted:
            self._trace(RequestEvent(r.request_id, "admitted", self.now(), {"reserved_bytes": r.reserved_bytes}))
        for r, error in decision.ended:
            self._end(r, RequestStatus.FINISHED if error is None else RequestStatus.FAILED, error)
        if decision.stalled is not None:
            for r in list(self.scheduler.running):
                self._fail(r, f"stalled, no loop can run ({decision.stalled})")
        launched = 0
        for group in decision.batches:
            launched += self._launch(group.entries)
        if not launched and self._in_flight:  # nothing else can proceed: wait for the first call back
            self._fold_completed(block=True)
        self.stats.ticks += 1
        self.stats.tick_s += time.perf_counter() - start

    def _launch(self, entries: list[Entry]) -> int:
        """Hand a batch to its component's executor as the scheduler says; returns calls made."""
        live = self.scheduler.runnable(entries)
        if not live:
            return 0
        component = live[0].loop.component
        key = id(component)
        if key in self._busy:
            return 0  # one call per component in flight: the plan is made again next tick
        verdict, need, half, error = self.scheduler.reserve_step(live, bool(self._in_flight))
        if verdict is not Verdict.RUN:
            if verdict is Verdict.SPLIT:
                return self._launch(live[:half]) + self._launch(live[half:])
            if verdict is Verdict.FAIL:
                self._fail(live[0].request, error)
            return 0
        if (executor := self._executors.get(key)) is None:  # (not `or`: an executor may define __len__)
            executor = self._executors[key] = InlineExecutor(component)
        t = time.perf_counter()
        kind, inputs = live[0].plan.kind, [e.plan.inputs for e in live]
        if executor.inline:  # fold at once, exactly as a synchronous call (no Future to build and settle)
            outcome = executor.run(kind, inputs)
            self.stats.executor_s += time.perf_counter() - t
            self._fold(live, need, outcome)
            return 1
        future = executor.submit(kind, inputs)
        self.stats.executor_s += time.perf_counter() - t
        call = Call(live, need, key)
        if future.done():
            self._fold_future(call, future)
        else:
            self._in_flight[future] = call
            self._busy.add(key)
            self._busy_states.update(id(e.state) for e in live)
        return 1

    def _fold_completed(self, *, block: bool) -> None:
        t = time.perf_counter()
        if block:
            wait(list(self._in_flight), return_when=FIRST_COMPLETED)
            self.stats.executor_s += time.perf_counter() - t
        for future in [f for f in self._in_flight if f.done()]:
            call = self._in_flight.pop(future)
            self._busy.discard(call.component_id)
            self._busy_states.difference_update(id(e.state) for e in call.entries)
            self._fold_future(call, future)

    def _fold_future(self, call: Call, future: Future[BatchOutcome]) -> None:
        try:
            outcome = future.result()
        except Exception as exc:  # the executor itself broke (a worker died): the whole batch fails
            self.scheduler.refund_step(call.reserved, None)
            for entry in call.entries:
                self._fail(entry.request, f"{entry.loop.loop_id}: {one_line(exc)}")
            return
        self._fold(call.entries, call.reserved, outcome)

    def _fold(self, live: list[Entry], reserved: int, outcome: BatchOutcome) -> None:
        """The scheduler's postprocess: refund, then fold each output into its loop (or fail its request)."""
        loop, outputs, stats = live[0].loop, outcome.outputs, self.stats
        self.scheduler.refund_step(reserved, loop.component)
        stats.component_s += outcome.dur_s
        stats.batched_calls += 1
        loop_id = loop.loop_id
        # a component may hand back an exception in place of one request's output: that request fails
        # alone (the others' steps already ran and must not be run again); a request that ended while
        # its step was in flight is not folded
        for entry, o in zip(live, outputs, strict=True):  # a loop, not any(...): a generator costs more
            if isinstance(o, Exception) or entry.request.status.is_done:
                live, outputs = self._foldable(live, outputs, loop_id)
                if not live:
                    return
                break
        items = ([(e.state, e.plan, o) for e, o in zip(live, outputs, strict=True)] if len(live) > 1
                 else [(live[0].state, live[0].plan, outputs[0])])
        try:
            errors = loop.advance_many(items)
        except Exception as exc:  # the batch's shared part (e.g. sampling) broke: fail each of its requests
            errors = [exc] * len(items)
        if loop.pacing is not None:  # the scheduler's pacing learns from a paced step's time
            self.scheduler.folded(live)
        subscribers = self._subscribers
        for entry, error in zip(live, errors, strict=True):
            r = entry.request
            if error is not None:
                self._fail(r, f"{loop_id}: {one_line(error)}")
                continue
            r.units[loop_id] += 1
            stats.work_units += 1
            if subscribers:  # building the event costs more than the bookkeeping around it (_trace, inlined)
                event = WorkUnitEvent(r.request_id, loop_id, entry.plan.kind, entry.plan.step, len(live),
                                      outcome.start_s - self._t0, outcome.dur_s, loop.stage)
                for fn in subscribers:
                    fn(event)

    def _foldable(self, live: list[Entry], outputs: list, loop_id: str) -> tuple[list[Entry], list]:
        """The entries to fold: those whose request still runs; a request given an exception fails here."""
        for entry, o in zip(live, outputs, strict=True):
            if isinstance(o, Exception):
                self._fail(entry.request, f"{loop_id}: {one_line(o)}")
        kept = [(e, o) for e, o in zip(live, outputs, strict=True) if not e.request.status.is_done]
        return [e for e, _ in kept], [o for _, o in kept]

    # request lifecycle
    def _fail(self, r: EngineRequest, error: str) -> None:
        self._end(r, RequestStatus.FAILED, error)

    def _end(self, r: EngineRequest, status: RequestStatus, error: str | None) -> None:
        if r.status.is_done:
            return
        results: dict = {}
        try:
            r.end_loops(status is RequestStatus.FINISHED, results)
        finally:
            self.scheduler.remove(r)  # its resident bytes refunded
            del self._requests[r.request_id]
            self._cancels.discard(r.request_id)
            r.wired = None  # its caches, channels and hidden states go now, not when the caller lets go
            if r.collect:
                r.results = results
            r.status, r.error, r.finished_s = status, error, self.now()
            metrics = r.metrics(self.sample_rate, results)
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
