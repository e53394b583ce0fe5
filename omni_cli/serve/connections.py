"""Connections that send half a request and wait: closed after a header timeout, and never more than a cap.

uvicorn closes an idle keep-alive connection, but not one that sent a few bytes of a header block (or
nothing) and waits: a few hundred of those hold as many file descriptors for ever. This h11 protocol
gives every connection `header_timeout_s` from its start (or its last response) to a whole header
block, and past `max_connections` open it closes the oldest connection that is still waiting for its
headers, so a client with a whole request (a load balancer's /health) always gets in. The body's own
deadline is the app's (app.read_body): uvicorn has none.
"""

from __future__ import annotations

import asyncio

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol


def guarded_protocol(header_timeout_s: float, max_connections: int) -> type[H11Protocol]:
    """The protocol class for `uvicorn.Config(http=...)`, with these limits."""
    return type("GuardedH11Protocol", (GuardedH11Protocol,),
                {"header_timeout_s": header_timeout_s, "max_connections": max_connections})


class GuardedH11Protocol(H11Protocol):
    header_timeout_s = 10.0
    max_connections = 512

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        self._header_timer: asyncio.TimerHandle | None = None
        super().connection_made(transport)
        self._arm()
        if len(self.connections) > self.max_connections:
            self._evict()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None
        super().connection_lost(exc)

    def handle_websocket_upgrade(self, event: h11.Request) -> None:
        if self._header_timer is not None:  # the WebSocket protocol takes the connection over
            self._header_timer.cancel()
            self._header_timer = None
        super().handle_websocket_upgrade(event)

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._arm()  # the next request's headers get the same time as the first's

    def waiting_for_headers(self) -> bool:
        """True between requests: no whole header block yet, no response being made."""
        return self.conn.their_state is h11.IDLE and (self.cycle is None or self.cycle.response_complete)

    def _arm(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
        self._waiting_since = self.loop.time()
        self._header_timer = self.loop.call_later(self.header_timeout_s, self._on_header_timeout)

    def _on_header_timeout(self) -> None:
        self._header_timer = None
        if self.waiting_for_headers() and not self.transport.is_closing():
            self.transport.close()

    def _evict(self) -> None:
        """Over the cap: close the oldest connection still waiting for its headers (this one, if none is)."""
        waiting = [c for c in self.connections if isinstance(c, GuardedH11Protocol) and c.waiting_for_headers()
                   and not c.transport.is_closing()]
        victim = min(waiting, key=lambda c: c._waiting_since) if waiting else self
        victim.transport.close()
