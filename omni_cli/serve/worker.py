"""The engine thread: the one thread that owns the (not thread-safe) Engine, fed through a queue.

HTTP handlers run on the server's asyncio loop. They never touch the engine: `submit` and `cancel`
put a message in a thread-safe inbox, and the engine thread routes each request's events back to
that request's asyncio queue with `loop.call_soon_threadsafe`. While requests run, the thread reads
its inbox between ticks, so a cancel takes effect at the next step boundary; when the engine is
idle it blocks on the inbox and costs nothing.
"""

from __future__ import annotations

import asyncio
import itertools
import math
import queue
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from ..audio.resample import ChunkResampler
from ..engine import Engine, TraceEvent
from ..spec import SpeakRequest
from ..spec.stream import AudioChunk, RequestDone, RequestStatus, StreamEvent
from .errors import ApiError


@dataclass(eq=False)
class Ticket:
    """One HTTP request's view of its engine request: acceptance, then its events in order."""

    request_id: str
    request: SpeakRequest
    loop: asyncio.AbstractEventLoop
    accepted: asyncio.Future = field(repr=False)  # None when the engine took it, else the refusal
    events: asyncio.Queue = field(repr=False)
    sample_rate: int  # of the AudioChunks in `events`: the card's, or the rate the client asked for
    resampler: ChunkResampler | None = field(default=None, repr=False)  # card rate -> sample_rate
    resampled: int = 0  # chunks resampled so far
    is_done: bool = False  # set on the loop thread when RequestDone (or a refusal) arrived


class EngineWorker:
    """Runs `engine` on its own thread; at most `concurrency` requests in it, `max_queue` more waiting."""

    def __init__(self, engine: Engine, *, concurrency: int = 8, max_queue: int = 64,
                 on_event: Callable[[Ticket, StreamEvent | BaseException], None] | None = None,
                 on_trace: Callable[[TraceEvent], None] | None = None):
        self.engine = engine
        self.concurrency = concurrency
        self.max_queue = max_queue
        self.active = 0  # accepted, not yet done: read and written on the asyncio loop thread only
        self.recent_latency_s: deque[float] = deque(maxlen=32)  # for Retry-After
        self._on_event = on_event
        self._inbox: queue.SimpleQueue = queue.SimpleQueue()
        self._pending: deque[Ticket] = deque()  # engine thread: waiting for a concurrency slot
        self._routes: dict[str, Ticket] = {}  # engine thread: request id -> its ticket
        self._ids = itertools.count(1)
        self._thread = threading.Thread(target=self._run, name="omni-engine", daemon=True)
        if on_trace is not None:
            engine.subscribe(on_trace)  # before the thread starts: subscribers are not thread-safe

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout_s: float = 5.0) -> None:
        """Cancel what runs, finish the thread (its requests end as cancelled)."""
        self._inbox.put(("stop", None))
        self._thread.join(timeout_s)

    @property
    def is_alive(self) -> bool:
        return self._thread.is_alive()

    def failure(self) -> str | None:
        """Why no request can run now (the engine thread ended, a component's worker process died), else None."""
        if not self._thread.is_alive():
            crashed = f": {type(self.crashed).__name__}: {self.crashed}" if self.crashed is not None else ""
            return f"the engine thread has stopped{crashed}"
        reasons = self.engine.failures()
        return "; ".join(reasons) if reasons else None

    @property
    def waiting(self) -> int:
        """Accepted requests beyond the running ones (the queue `--max-queue` bounds)."""
        return max(0, self.active - self.concurrency)

    # asyncio side
    def submit(self, request: SpeakRequest, prefix: str = "speech", sample_rate: int | None = None) -> Ticket:
        """Queue a request (call on the event loop). Raises ApiError 429 when the queue is full.
        sample_rate: the client's rate, its audio resampled to it as it arrives; None: the card's."""
        if self.active >= self.concurrency + self.max_queue:
            raise ApiError(429, f"the server is busy: {self.active} requests running or waiting "
                                f"(--concurrency {self.concurrency}, --max-queue {self.max_queue}); retry later",
                           type="rate_limit_error", code="rate_limit_exceeded",
                           headers={"Retry-After": str(self.retry_after_s())})
        failure = self.failure()
        if failure is not None:  # one line, at once: no request could run, so none is queued
            raise ApiError(503, f"the server cannot run requests: {failure}; it must be restarted",
                           type="server_error", code="engine_unhealthy")
        loop = asyncio.get_running_loop()
        rid = f"{prefix}-{next(self._ids)}"
        request = replace(request, request_id=rid)  # every other field as the body gave it (speed and heard audio included)
        rate = sample_rate or self.engine.sample_rate
        resampler = ChunkResampler(self.engine.sample_rate, rate) if rate != self.engine.sample_rate else None
        ticket = Ticket(rid, request, loop, loop.create_future(), asyncio.Queue(), rate, resampler)
        self.active += 1
        self._inbox.put(("submit", ticket))
        return ticket

    def cancel(self, ticket: Ticket) -> None:
        """Ask the engine to drop the request at its next step boundary (any thread)."""
        if not ticket.is_done:
            self._inbox.put(("cancel", ticket.request_id))

    def retry_after_s(self) -> int:
        """Seconds until a slot is likely free: the recent mean latency, 1 to 60."""
        mean = sum(self.recent_latency_s) / len(self.recent_latency_s) if self.recent_latency_s else 1.0
        return max(1, min(60, math.ceil(mean)))

    def _deliver(self, ticket: Ticket, item: StreamEvent | BaseException | None) -> None:
        """On the loop thread: acceptance (None), a refusal (an exception) or an event."""
        if ticket.is_done:
            return
        if item is None:
            if not ticket.accepted.done():
                ticket.accepted.set_result(None)
            return
        if isinstance(item, BaseException):
            ticket.is_done = True
            self.active -= 1
            if not ticket.accepted.done():
                ticket.accepted.set_exception(item)
                ticket.accepted.exception()  # retrieved here: a client gone before it is not an error
            if self._on_event is not None:
                self._on_event(ticket, item)
            return
        if ticket.resampler is not None and isinstance(item, (AudioChunk, RequestDone)):
            item = self._resampled(ticket, item)
        if isinstance(item, RequestDone):
            ticket.is_done = True
            self.active -= 1
            if item.status is RequestStatus.FINISHED:
                self.recent_latency_s.append(item.metrics.get("latency_s") or 0.0)
            if not ticket.accepted.done():  # cancelled while it waited for a slot
                ticket.accepted.set_result(None)
        if self._on_event is not None:
            self._on_event(ticket, item)
        ticket.events.put_nowait(item)

    @staticmethod
    def _resampled(ticket: Ticket, item: AudioChunk | RequestDone) -> AudioChunk | RequestDone:
        """A chunk at the client's rate in place of the card's, and the filter's tail queued before a finished
        request's RequestDone: the resampler keeps its state between chunks, so the joined chunks are the whole."""
        if isinstance(item, AudioChunk):
            ticket.resampled += 1
            return replace(item, sample_rate=ticket.sample_rate, samples=ticket.resampler.chunk(item.samples))
        if item.status is RequestStatus.FINISHED:
            tail = ticket.resampler.flush()
            if tail.size:
                ticket.events.put_nowait(AudioChunk(ticket.request_id, ticket.resampled, ticket.sample_rate, tail))
        return item

    # engine thread
    def _send(self, ticket: Ticket, item: StreamEvent | BaseException | None) -> None:
        try:
            ticket.loop.call_soon_threadsafe(self._deliver, ticket, item)
        except RuntimeError:  # the server's loop is closed: nobody is listening any more
            pass

    def _run(self) -> None:
        engine = self.engine
        try:
            while True:
                block = engine.is_idle and not self._pending
                while True:  # drain the inbox: what came in during the last tick
                    try:
                        kind, payload = self._inbox.get(block=block)
                    except queue.Empty:
                        break
                    block = False
                    if kind == "stop":
                        self._shutdown()
                        return
                    if kind == "submit":
                        self._pending.append(payload)
                    else:
                        self._cancel(payload)
                while self._pending and engine.num_active < self.concurrency:
                    self._start(self._pending.popleft())
                if not engine.is_idle:
                    engine.step()
                self._route(engine.poll())
        except BaseException as exc:  # a broken engine: every open request hears it, the server says 503
            for ticket in [*self._routes.values(), *self._pending]:
                self._send(ticket, RequestDone(ticket.request_id, RequestStatus.FAILED, f"engine crashed: {exc}"))
            raise

    def _start(self, ticket: Ticket) -> None:
        try:
            self.engine.submit(ticket.request)
        except Exception as exc:  # bad input (SpecError) or a request that can never fit (AdmissionError)
            self._send(ticket, exc)
            return
        self._routes[ticket.request_id] = ticket
        self._send(ticket, None)

    def _cancel(self, request_id: str) -> None:
        for ticket in self._pending:
            if ticket.request_id == request_id:  # never reached the engine: nothing to release
                self._pending.remove(ticket)
                self._send(ticket, RequestDone(request_id, RequestStatus.CANCELLED, "cancelled while queued"))
                return
        self.engine.cancel(request_id)

    def _route(self, events: list[StreamEvent]) -> None:
        # one hand-over per loop and tick, not one per event: each wakes the loop and trades the GIL
        batches: dict[asyncio.AbstractEventLoop, list] = {}
        for event in events:
            ticket = self._routes.get(event.request_id)
            if ticket is None:
                continue
            if isinstance(event, RequestDone):
                del self._routes[event.request_id]
            batches.setdefault(ticket.loop, []).append((ticket, event))
        for loop, items in batches.items():
            try:
                loop.call_soon_threadsafe(self._deliver_many, items)
            except RuntimeError:  # the server's loop is closed: nobody is listening any more
                pass

    def _deliver_many(self, items: list) -> None:
        for ticket, event in items:
            self._deliver(ticket, event)

    def _shutdown(self) -> None:
        for ticket in self._pending:
            self._send(ticket, RequestDone(ticket.request_id, RequestStatus.CANCELLED, "the server is stopping"))
        self._pending.clear()
        self.engine.cancel_all()
        while not self.engine.is_idle:
            self.engine.step()
        self._route(self.engine.poll())
