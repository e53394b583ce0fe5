"""Stream events waiting for their readers: one queue for `poll()`, one per request read by `stream_of()`.

A request's queue exists only while someone reads that request alone, and goes with its last event
(RequestDone): nothing here outlives what its reader has not read yet (finished requests are not
kept).
"""

from __future__ import annotations

from collections import deque

from ..spec.stream import RequestDone, StreamEvent


class EventQueue:
    def __init__(self) -> None:
        self._events: deque[StreamEvent] = deque()
        self._mine: dict[str, deque[StreamEvent]] = {}  # request id -> events set aside for its reader

    def append(self, event: StreamEvent) -> None:
        self._events.append(event)

    def __len__(self) -> int:
        return len(self._events) + sum(len(q) for q in self._mine.values())

    def poll(self) -> list[StreamEvent]:
        """Every event not read yet, in order; set-aside ones first (they happened first)."""
        if not self._mine:  # nobody reads one request alone (the common case): once per tick
            out = list(self._events)
            self._events.clear()
            return out
        out: list[StreamEvent] = []
        for waiting in self._mine.values():
            out.extend(waiting)
            waiting.clear()
        self._mine.clear()  # a reader of one request fetches its queue again on each take()
        out.extend(self._events)
        self._events.clear()
        return out

    def take(self, request_id: str) -> tuple[list[StreamEvent], bool]:
        """This request's unread events (others' set aside for their readers), and whether its RequestDone
        was among them."""
        out = list(self._mine.pop(request_id, ()))
        while self._events:
            event = self._events.popleft()
            rid = event.request_id
            if rid == request_id:
                out.append(event)
            else:
                self._mine.setdefault(rid, deque()).append(event)
        return out, bool(out) and isinstance(out[-1], RequestDone)
