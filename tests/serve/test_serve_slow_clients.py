"""Clients that send half a request and wait: /health answers throughout, and their sockets are closed."""

from __future__ import annotations

import select
import socket
import time

import httpx
import pytest
from serve_helpers import CARD, serve

HELD = 200  # half-open connections at once: a few hundred, as in the report
TIMEOUT_S = 1.0  # the test server's header and body timeouts


@pytest.fixture(scope="module")
def strict(toy):
    served = serve(toy, header_timeout_s=TIMEOUT_S, body_timeout_s=TIMEOUT_S, max_connections=HELD + 50)
    yield served
    served.server.stop()


def _open(url: str, count: int, payload: bytes) -> list[socket.socket]:
    host, port = url.removeprefix("http://").split(":")
    socks = []
    for _ in range(count):
        s = socket.create_connection((host, int(port)), timeout=5)
        if payload:
            s.sendall(payload)
        socks.append(s)
    return socks


def _closed_by_server(socks: list[socket.socket], within_s: float) -> tuple[int, list[bytes]]:
    """How many of `socks` the server closed within `within_s`, and what each sent before closing."""
    pending, said = {s.fileno(): s for s in socks}, {s.fileno(): b"" for s in socks}
    deadline = time.monotonic() + within_s
    while pending and time.monotonic() < deadline:
        ready, _, _ = select.select(list(pending.values()), [], [], 0.2)
        for s in ready:
            try:
                data = s.recv(4096)
            except ConnectionResetError:
                data = b""
            said[s.fileno()] += data
            if not data:
                del pending[s.fileno()]
    closed = len(socks) - len(pending)
    for s in socks:
        s.close()
    return closed, [v for v in said.values() if v]


def _health(url: str) -> int:
    return httpx.get(url + "/health", timeout=5).status_code


@pytest.mark.parametrize("payload", [b"", b"POST /v1/audio/speech HTTP/1.1\r\nHost: x\r\nContent-Ty"],
                         ids=["nothing", "half-headers"])
def test_connections_without_whole_headers_are_closed_and_health_answers_meanwhile(strict, payload):
    socks = _open(strict.url, HELD, payload)
    assert _health(strict.url) == 200  # while all of them are held open
    closed, said = _closed_by_server(socks, within_s=TIMEOUT_S + 10)
    assert closed == HELD and said == []
    assert _health(strict.url) == 200


def test_a_body_that_stops_half_way_gets_408_and_the_connection_is_closed(strict):
    head = (b"POST /v1/audio/speech HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: 200\r\n\r\n")
    socks = _open(strict.url, 20, head + b'{"model": "' + CARD.encode())
    assert _health(strict.url) == 200
    closed, said = _closed_by_server(socks, within_s=TIMEOUT_S + 10)
    assert closed == 20 and len(said) == 20
    assert all(s.startswith(b"HTTP/1.1 408 ") and b'"code":"request_timeout"' in s for s in said), said[0]


def test_past_the_connection_cap_the_oldest_waiting_ones_make_room(toy):
    cap = 40
    served = serve(toy, header_timeout_s=60, max_connections=cap)  # only the cap can close them here
    try:
        first = _open(served.url, cap, b"GET /hea")
        assert _health(served.url) == 200  # one over the cap: the oldest waiting one is closed for it
        later = _open(served.url, 30, b"GET /hea")
        assert _health(served.url) == 200
        closed_first, _ = _closed_by_server(first, within_s=3)
        closed_later, _ = _closed_by_server(later, within_s=0.5)
        assert closed_first >= 30 and closed_later == 0  # one per connection past the cap, oldest first
    finally:
        served.server.stop()


def test_a_body_refused_as_too_large_ends_the_connection(strict):
    head = (f"POST /v1/audio/speech HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            f"Content-Length: {10 << 20}\r\n\r\n").encode()
    socks = _open(strict.url, 1, head + b"{" + b" " * 1000)  # the client would go on sending the rest
    closed, said = _closed_by_server(socks, within_s=5)
    assert closed == 1 and said[0].startswith(b"HTTP/1.1 413 ") and b"connection: close" in said[0].lower()
