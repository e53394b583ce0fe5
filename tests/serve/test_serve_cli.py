"""`omni serve` as people start it: a process that prints where it listens, answers, and stops on Ctrl-C."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
from serve_helpers import CARD
from terminal_helpers import serve_on_a_terminal

ROOT = Path(__file__).resolve().parents[2]
ENV = {**{k: v for k, v in os.environ.items() if not k.startswith("OMNI_")}, "PYTHONPATH": str(ROOT),
       "PYTHONUNBUFFERED": "1"}


def test_omni_serve_listens_answers_and_stops_on_sigint():
    proc = subprocess.Popen([sys.executable, "-m", "omni_cli.cli", "serve", "--card", CARD, "--port", "0", "--max-queue", "4"],
                            stderr=subprocess.PIPE, text=True, env=ENV, cwd=ROOT)
    try:
        line = proc.stderr.readline()
        found = re.search(r"on http://127\.0\.0\.1:(\d+) ", line)
        assert found, line
        assert re.search(r", warmed up in \d+\.\d s\); Ctrl-C stops$", line), line  # one utterance before it listens
        url = f"http://127.0.0.1:{found.group(1)}"
        deadline = time.monotonic() + 30
        while True:
            try:
                assert httpx.get(url + "/health").json()["status"] == "ok"
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline
                time.sleep(0.05)
        r = httpx.post(url + "/v1/audio/speech", json={"model": CARD, "input": "Hello", "response_format": "wav"})
        assert r.status_code == 200 and r.content[:4] == b"RIFF"
        proc.send_signal(signal.SIGINT)
        assert proc.wait(30) == 130
        rest = proc.stderr.read()
        assert "Traceback" not in rest, rest
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stderr.close()


def test_a_port_in_use_is_one_line_and_exit_1():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        done = subprocess.run([sys.executable, "-m", "omni_cli.cli", "serve", "--card", CARD, "--port", str(port)],
                              capture_output=True, text=True, env=ENV, cwd=ROOT, timeout=60)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [f"omni: error: cannot listen on 127.0.0.1:{port}: Address already in use"]


def test_serve_help_names_the_routes_and_the_options():
    from typer.testing import CliRunner

    from omni_cli.cli.app import app

    result = CliRunner().invoke(app, ["serve", "--help"], terminal_width=80)
    assert result.exit_code == 0
    for needle in ("/v1/audio/speech", "/v1/chat/completions", "--api-key", "--max-queue", "--concurrency", "429", "--no-warm-up"):
        assert needle in result.output, needle


def test_a_terminal_sees_the_warm_up_then_the_address_line_in_its_place():
    seen, status = serve_on_a_terminal(["--card", CARD, "--port", "0"], ENV, timeout=60)
    assert status == 130
    note, rest = seen.split(b"\r\x1b[K", 1)  # the note, a carriage return and erase-line, then the address line
    assert note == b"omni serve: warming up (one utterance nobody hears)..."
    assert len(note) < 80  # one carriage return takes it back in an 80-column terminal
    assert re.match(rb"omni serve: \S+ on http://127\.0\.0\.1:\d+ .*warmed up in \d+\.\d s\); Ctrl-C stops", rest), rest


def test_ctrl_c_in_the_warm_up_takes_its_note_back_on_a_terminal(monkeypatch):
    """The note has no newline of its own: stopped there, it must not leave the shell's prompt after it."""
    import io

    import pytest

    from omni_cli.cli import serve, session

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    class Engine:
        def warm_up(self) -> float:
            raise KeyboardInterrupt

    err = Terminal()
    monkeypatch.setattr(sys, "stderr", err)
    monkeypatch.setattr(session, "open_engine", lambda *args, **kwargs: Engine())
    installed = []
    monkeypatch.setattr(signal, "signal", lambda signum, handler: installed.append((signum, handler)))
    with pytest.raises(KeyboardInterrupt):
        serve.serve(port=0)
    assert err.getvalue() == "omni serve: warming up (one utterance nobody hears)...\r\x1b[K"
    # Ctrl-C raises KeyboardInterrupt there (the start-up handler would end the process mid-line)
    assert installed == [(signal.SIGINT, signal.default_int_handler)]
