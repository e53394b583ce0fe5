"""`omni speak --server URL` as a client of a real `omni serve` subprocess: same outputs, same exit codes."""

from __future__ import annotations

import io
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
import soundfile

ROOT = Path(__file__).resolve().parents[2]
ENV = {**{k: v for k, v in os.environ.items() if not k.startswith("OMNI_")}, "PYTHONPATH": str(ROOT),
       "PYTHONUNBUFFERED": "1"}
TEXT = "Hello from the server."


@pytest.fixture(scope="module")
def served():
    """A real `omni serve` (the toy card) on a free port, with an API key; its URL."""
    proc = subprocess.Popen([sys.executable, "-m", "omni_cli.cli", "serve", "--card", "qwen2_5_omni_toy", "--port", "0", "--no-warm-up",
                             "--api-key", "sesame"], stderr=subprocess.PIPE, text=True, env=ENV, cwd=ROOT)
    try:
        found = re.search(r"on (http://127\.0\.0\.1:\d+) ", proc.stderr.readline())
        assert found
        url = found.group(1)
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(url + "/health").status_code == 200:
                    break
            except httpx.TransportError:
                assert time.monotonic() < deadline
                time.sleep(0.05)
        yield url
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        proc.stderr.close()


def speak(*args, url=None, key="sesame", stdin=None, cwd=ROOT):
    env = {**ENV, **({"OMNI_SERVER": url} if url else {}), **({"OMNI_API_KEY": key} if key else {})}
    return subprocess.run([sys.executable, "-m", "omni_cli.cli", "speak", *args], input=stdin, capture_output=True,
                          env=env, cwd=cwd, timeout=120)


def _error_line(done) -> str:
    err = done.stderr.decode()
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.startswith("omni: error: ")]
    assert len(lines) == 1, err
    return lines[0]


def test_a_wav_file_holds_exactly_what_the_engine_makes(served, solo_pcm, tmp_path):
    out = tmp_path / "hi.wav"
    done = speak(TEXT, "-o", str(out), "--server", served)
    assert done.returncode == 0, done.stderr
    samples, rate = soundfile.read(out, dtype="int16")
    assert rate == 24000 and samples.tobytes() == solo_pcm(TEXT)


def test_raw_pcm_to_stdout_with_the_server_from_the_environment(served, solo_pcm):
    done = speak(TEXT, "-o", "-", "--format", "raw", "--voice", "alto", url=served)
    assert done.returncode == 0, done.stderr
    assert done.stdout == solo_pcm(TEXT, voice="alto")


def test_stdin_lines_go_to_numbered_files_with_json_records(served, solo_pcm, tmp_path):
    done = speak("-", "-o", f"{tmp_path}/", "--json", "--server", served, stdin=b"One.\n\nTwo.\n")
    assert done.returncode == 0, done.stderr
    records = [__import__("json").loads(line) for line in done.stdout.decode().splitlines()]
    assert [(r["text"], r["status"]) for r in records] == [("One.", "finished"), ("Two.", "finished")]
    for name, text in (("0001.wav", "One."), ("0002.wav", "Two.")):
        samples, _ = soundfile.read(io.BytesIO((tmp_path / name).read_bytes()), dtype="int16")
        assert samples.tobytes() == solo_pcm(text)


def test_a_server_that_is_down_is_one_line_and_exit_1(tmp_path):
    done = speak(TEXT, "-o", str(tmp_path / "x.wav"), "--server", "http://127.0.0.1:9")
    assert done.returncode == 1
    assert "cannot reach omni serve at http://127.0.0.1:9" in _error_line(done)
    assert not (tmp_path / "x.wav").exists()


def test_a_server_that_refuses_the_key_is_one_line_and_exit_1(served):
    done = speak(TEXT, "--server", served, key="wrong")
    assert done.returncode == 1 and "HTTP 401" in _error_line(done)


@pytest.mark.parametrize("args,needle", [
    (["--voice", "nova"], "unknown voice 'nova'"),
    (["--handoff", "barrier"], "--handoff: not with --server"),
    (["--card", "qwen2_5_omni"], "serves qwen2_5_omni_toy"),
])
def test_bad_usage_is_one_line_and_exit_2(served, args, needle):
    done = speak(TEXT, *args, "--server", served)
    assert done.returncode == 2 and needle in _error_line(done)
