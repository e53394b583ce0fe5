"""A client that leaves cancels its request; overload is a 429 with Retry-After; what never fits is a 400."""

from __future__ import annotations

import socket
import time

import httpx
import pytest
from serve_helpers import CARD, LONG_TEXT, serve

from omni_cli.engine import WorkUnitEvent


def _raw_post(url: str, body: bytes) -> socket.socket:
    """Send a request and read nothing: a client that is there but has not been answered yet."""
    host, port = url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)))
    sock.sendall(b"POST /v1/audio/speech HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
    return sock


def _wait(predicate, timeout_s=20.0):
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_a_client_that_disconnects_mid_stream_cancels_its_request_and_frees_its_memory(server):
    with httpx.stream("POST", server.url + "/v1/audio/speech", timeout=60,
                      json={"model": CARD, "input": LONG_TEXT, "response_format": "pcm", "stream": True}) as r:
        rid = r.headers["x-request-id"]
        lines = r.iter_lines()
        assert next(lines).startswith("data: ")
        assert server.engine.budget.reserved > 0  # it holds its KV caches while it runs
    # the client is gone: the request ends at a step boundary, refunded
    _wait(lambda: server.trace.phase(rid, "cancelled") is not None)
    server.wait_idle()
    assert server.engine.budget.reserved == 0
    cancelled = server.trace.phase(rid, "cancelled")
    units = [e for e in server.trace.of(rid) if isinstance(e, WorkUnitEvent)]
    assert units and all(e.start_s <= cancelled.t_s for e in units)  # no WorkUnit of it ran after
    full = cancelled.detail["num_samples"]
    assert 0 < full < 24000 * 100  # it had made audio, far from the two minutes the text would give
    assert httpx.get(server.url + "/health").json()["active"] == 0


def test_a_client_that_leaves_before_its_first_audio_also_cancels(server):
    sock = _raw_post(server.url, b'{"model": "%s", "input": "%s"}' % (CARD.encode(), LONG_TEXT.encode()))
    _wait(lambda: server.engine.budget.reserved > 0)
    sock.close()  # a whole-file request: the client leaves while the server is still making it
    server.wait_idle()
    assert server.engine.budget.reserved == 0
    ends = [e for e in server.trace.events if getattr(e, "phase", None) in ("finished", "cancelled")]
    assert ends[-1].phase == "cancelled"


@pytest.fixture(scope="module")
def small(toy):
    """One request at a time, one more waiting."""
    served = serve(toy, concurrency=1, max_queue=1)
    yield served
    served.server.stop()


def test_over_the_queue_a_request_gets_429_with_retry_after(small):
    body = b'{"model": "%s", "input": "%s", "response_format": "pcm"}' % (CARD.encode(), LONG_TEXT.encode())
    running = _raw_post(small.url, body)
    _wait(lambda: small.ctx.worker.active == 1)
    waiting = _raw_post(small.url, body)
    _wait(lambda: small.ctx.worker.active == 2)
    assert httpx.get(small.url + "/health").json()["waiting"] == 1
    r = httpx.post(small.url + "/v1/audio/speech", json={"model": CARD, "input": "Hi"})
    assert r.status_code == 429 and int(r.headers["retry-after"]) >= 1
    error = r.json()["error"]
    assert error["code"] == "rate_limit_exceeded" and "--max-queue 1" in error["message"]
    metrics = httpx.get(small.url + "/metrics").text
    assert 'omni_requests_total{endpoint="speech",status="http_429"} 1' in metrics
    assert "omni_queue_depth 1" in metrics
    running.close()
    waiting.close()  # left while queued: it never reached the engine
    small.wait_idle()
    assert small.engine.budget.reserved == 0
    r = httpx.post(small.url + "/v1/audio/speech", json={"model": CARD, "input": "Hi", "response_format": "wav"})
    assert r.status_code == 200 and r.content[:4] == b"RIFF"  # room again


def test_a_request_that_can_never_fit_is_a_400_naming_the_limit(toy):
    served = serve(toy, memory_budget_bytes=64 << 10)
    try:
        r = httpx.post(served.url + "/v1/audio/speech", json={"model": CARD, "input": "Hello"})
        assert r.status_code == 400
        error = r.json()["error"]
        assert error["code"] == "request_too_large" and "memory budget" in error["message"]
        assert "MiB" in error["message"] and error["param"] == "input"
        assert httpx.get(served.url + "/health").json()["active"] == 0
    finally:
        served.server.stop()
