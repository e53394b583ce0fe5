"""A component's worker process killed under a real server: /health says so (503, the reason), the request in
flight fails with one line, and later requests get a 503 at once instead of a 500 for ever."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest
from serve_helpers import CARD, LONG_TEXT, Served, serve

from omni_cli.api import load
from omni_cli.engine import Engine
from omni_cli.engine.executors import make_executors, placement_of
from omni_cli.serve.server import start_background
from omni_cli.spec.placement import override_placement

ROOT = Path(__file__).resolve().parents[2]
ENV = {**{k: v for k, v in os.environ.items() if not k.startswith("OMNI_")}, "PYTHONPATH": str(ROOT),
       "PYTHONUNBUFFERED": "1"}


@pytest.fixture
def placed():
    """A server whose vocoder runs in a worker process (`--placement vocoder=process`)."""
    program = load(CARD)
    placement = placement_of(program, override_placement(program.card.placement, "vocoder=process",
                                                         list(program.components)))
    executors = make_executors(program, placement)
    engine = Engine(program, executors=executors)
    served = Served(start_background(engine, CARD), recorder=None)
    yield served, executors["vocoder"]
    served.server.stop()
    engine.close()


def _speak(url: str, text: str) -> httpx.Response:
    return httpx.post(url + "/v1/audio/speech", json={"model": CARD, "input": text, "response_format": "wav"},
                      timeout=60)


def test_a_killed_worker_makes_health_503_and_fails_requests_with_one_line(placed):
    served, vocoder = placed
    assert httpx.get(served.url + "/health").json()["status"] == "ok"
    assert _speak(served.url, "Before the worker dies.").status_code == 200

    answers = []  # a whole-file request: its failure is a JSON body, not a cut stream
    thread = threading.Thread(target=lambda: answers.append(_speak(served.url, LONG_TEXT)))
    thread.start()
    deadline = time.monotonic() + 30
    while not served.ctx.worker.active:  # the long request is in the engine
        assert time.monotonic() < deadline
        time.sleep(0.01)
    (pid,) = list(vocoder._pool._processes)  # the worker's own pid, killed as the OOM killer would
    os.kill(pid, signal.SIGKILL)
    thread.join(60)
    assert not thread.is_alive()
    (failed,) = answers
    assert failed.status_code == 500, failed.text[:300]
    message = failed.json()["error"]["message"]
    assert "vocoder: its worker process died" in message and "\n" not in message

    health = httpx.get(served.url + "/health", timeout=10)
    assert health.status_code == 503 and health.json()["status"] == "unhealthy"
    assert "vocoder: its worker process died" in health.json()["reason"]
    after = _speak(served.url, "After the worker died.")
    assert after.status_code == 503, after.text
    error = after.json()["error"]
    assert error["code"] == "engine_unhealthy" and "vocoder: its worker process died" in error["message"]
    metrics = httpx.get(served.url + "/metrics", timeout=10).text
    assert "omni_engine_up 0" in metrics


def test_health_is_503_even_before_any_request_meets_the_dead_worker(placed):
    served, vocoder = placed
    (pid,) = list(vocoder._pool._processes)
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while (health := httpx.get(served.url + "/health", timeout=10)).status_code == 200:
        assert time.monotonic() < deadline, "/health still says ok after the worker died"
        time.sleep(0.05)
    assert health.status_code == 503 and "vocoder" in health.json()["reason"]


def test_an_inline_server_stays_healthy(toy):
    served = serve(toy)
    try:
        assert httpx.get(served.url + "/health").status_code == 200 and served.engine.failures() == []
    finally:
        served.server.stop()


def _children(pid: int) -> list[tuple[int, str]]:
    """(pid, command line) of `pid`'s child processes, read from /proc."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            found.append((int(entry.name), cmdline))
    return found


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads child processes from /proc")
def test_omni_serve_with_a_placed_worker_reports_its_death_on_health():
    proc = subprocess.Popen([sys.executable, "-m", "omni_cli.cli", "serve", "--card", "qwen2_5_omni_toy", "--port", "0", "--no-warm-up",
                             "--placement", "vocoder=process"], stderr=subprocess.PIPE, text=True, env=ENV, cwd=ROOT)
    try:
        line = proc.stderr.readline()
        found = re.search(r"on http://127\.0\.0\.1:(\d+) ", line)
        assert found, line
        url = f"http://127.0.0.1:{found.group(1)}"
        assert _speak(url, "Hello.").status_code == 200
        (worker,) = [pid for pid, cmdline in _children(proc.pid) if "spawn_main" in cmdline]
        os.kill(worker, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while (health := httpx.get(url + "/health", timeout=10)).status_code == 200:
            assert time.monotonic() < deadline, "/health still says ok after the worker died"
            time.sleep(0.05)
        assert health.status_code == 503 and "vocoder: its worker process died" in health.json()["reason"]
        after = _speak(url, "Hello again.")
        assert after.status_code == 503 and after.json()["error"]["code"] == "engine_unhealthy"
        proc.send_signal(signal.SIGINT)
        assert proc.wait(30) == 130
        assert "Traceback" not in proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stderr.close()
