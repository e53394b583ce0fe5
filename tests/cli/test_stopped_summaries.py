"""Issue 18, summaries that say what happened: a run stopped by a full disk, a closed stdout or a signal
says so (`omni: stopped: …`), counts its cut-off utterances as stopped (never `1 running`), and gives
each a --json record with status "stopped" and the reason; RTF is wall ÷ audio, as the trace's."""

from __future__ import annotations

import errno
import json
import re
import signal
import subprocess
import time

import pytest
from cli_helpers import LONG_TEXT, read_wav, stderr_lines

PATIENCE_S = 120.0


def full_after(monkeypatch, chunks: int) -> list[int]:
    """WAV files take `chunks` chunks, then the disk is full; returns the sizes written."""
    from omni_cli.audio import AudioOutputError, WavFileWriter

    real = WavFileWriter._write_pcm
    written: list[int] = []

    def filling(self, pcm):
        if len(written) == chunks:
            raise AudioOutputError(self.target_name, "No space left on device", errno.ENOSPC)
        written.append(pcm.shape[0])
        real(self, pcm)

    monkeypatch.setattr(WavFileWriter, "_write_pcm", filling)
    return written


def test_a_full_disk_mid_run_says_stopped_disk_full(omni, home, monkeypatch, solo):
    written = full_after(monkeypatch, 2)
    result = omni("speak", "Hello, world", "-o", "a.wav", "--json")
    assert result.exit_code == 1
    [record] = [json.loads(line) for line in result.stdout.splitlines()]
    assert (record["status"], record["reason"]) == ("stopped", "disk full")
    assert record["error"] == "cannot write a.wav: No space left on device"
    lines = stderr_lines(result.stderr)
    assert lines[0] == "omni: stopped: disk full"
    assert lines[1].startswith("omni: 1 utterance (1 stopped): ") and "running" not in result.stderr
    assert lines[-1] == "omni: error: cannot write a.wav: No space left on device"
    samples = read_wav(home / "a.wav")[1]  # what was written before stays
    assert samples.size == sum(written) and (solo("Hello, world")[: samples.size] == samples).all()


def test_a_full_disk_at_the_first_chunk_removes_the_file_it_made(omni, home, monkeypatch):
    full_after(monkeypatch, 0)
    result = omni("speak", "Hello, world", "-o", "a.wav")
    assert result.exit_code == 1
    lines = stderr_lines(result.stderr)
    assert lines[0] == "omni: stopped: disk full"
    assert "omni: removed a.wav: no audio was written to it" in lines
    assert not (home / "a.wav").exists()


def test_a_full_disk_in_an_out_dir_stops_every_utterance_in_flight(omni, home, monkeypatch):
    full_after(monkeypatch, 3)
    result = omni("speak", "-", "-o", "out/", "--json", input="One.\nTwo.\nThree.\nFour.\n")
    assert result.exit_code == 1
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r["index"] for r in records] == sorted(r["index"] for r in records)  # input order
    stopped = [r for r in records if r["status"] == "stopped"]
    assert stopped and all(r["reason"] == "disk full" for r in stopped)
    assert {r["status"] for r in records} <= {"finished", "stopped"}
    assert "omni: stopped: disk full" in stderr_lines(result.stderr) and "running" not in result.stderr
    for r in records:  # a file is kept only with audio in it
        assert (r["path"] is None) == (r["num_samples"] == 0)


def test_a_full_device_for_headerless_audio_says_stopped_disk_full(omni):
    result = omni("speak", "Hello", "-o", "/dev/full", "--format", "raw")
    assert result.exit_code == 1
    lines = stderr_lines(result.stderr)
    assert lines[0] == "omni: stopped: disk full" and lines[1].startswith("omni: 1 utterance (1 stopped): ")
    assert lines[-1] == "omni: error: cannot write /dev/full: No space left on device"


def test_a_closed_stdout_says_stopped_stdout_closed(spawn):
    p = spawn("speak", LONG_TEXT, "-o", "-")
    assert len(p.stdout.read(100)) == 100  # `| head -c 100`
    p.stdout.close()
    assert p.wait(timeout=PATIENCE_S) == 141
    lines = stderr_lines(p.stderr.read().decode())
    assert lines[0] == "omni: stopped: stdout closed"
    assert lines[1].startswith("omni: 1 utterance (1 stopped): ") and "-> stdout" in lines[1]
    assert not any("running" in line or "error" in line for line in lines), lines


@pytest.mark.parametrize(("signum", "code", "reason"), [(signal.SIGINT, 130, "interrupted"),
                                                      (signal.SIGTERM, 143, "terminated")], ids=["INT", "TERM"])
def test_a_signal_says_stopped_and_marks_the_record(spawn, home, signum, code, reason):
    path = home / "long.wav"
    p = spawn("speak", LONG_TEXT, "-o", path.name, "--json")
    deadline = time.monotonic() + PATIENCE_S
    while (not path.exists() or path.stat().st_size < 50_000) and p.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    p.send_signal(signum)
    out, err = p.communicate(timeout=PATIENCE_S)
    assert p.returncode == code, err
    [record] = [json.loads(line) for line in out.decode().splitlines()]
    assert (record["status"], record["reason"], record["error"]) == ("stopped", reason, None)
    assert record["num_samples"] == read_wav(path)[1].size > 0
    lines = stderr_lines(err.decode())
    assert lines[0] == f"omni: stopped: {reason}" and lines[1].startswith("omni: 1 utterance (1 stopped): ")


def test_a_signal_before_any_line_removes_the_empty_file_and_says_so(spawn, home):
    path = home / "w.wav"
    p = spawn("speak", "-", "-o", path.name, stdin=subprocess.PIPE)  # `tail -f … |`: no line yet
    deadline = time.monotonic() + PATIENCE_S
    while not path.exists() and p.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=PATIENCE_S)
    assert p.returncode == 130 and not path.exists()
    lines = stderr_lines(err.decode())
    assert lines[0] == "omni: stopped: interrupted" and lines[1].startswith("omni: 0 utterances: 0.00 s of audio")
    assert "omni: removed w.wav: no audio was written to it" in lines


def test_the_summary_rtf_is_wall_over_audio(omni):
    result = omni("speak", "Hello, world")
    m = re.search(r"([\d.]+) s of audio in ([\d.]+) s \(RTF ([\d.<]+)\)", result.stderr)
    audio_s, wall_s, rtf = float(m[1]), float(m[2]), m[3]
    # the printed figures are rounded to 2 places: the RTF printed agrees with them to that precision
    assert rtf.startswith("<") or abs(float(rtf) - wall_s / audio_s) <= 0.01 / audio_s + 0.001


OPEN_THEN_CTRL_C = """
import os, signal, sys
from omni_cli.cli import outputs
opened = outputs.Router.open
def open_then_ctrl_c(self, *args, **kwargs):
    made = opened(self, *args, **kwargs)
    os.kill(os.getpid(), signal.SIGINT)  # the instant the file exists, before the run has begun
    return made
outputs.Router.open = open_then_ctrl_c
sys.argv = ["omni", "speak", "hello there", "-o", "w.wav"]
from omni_cli.cli.entry import main
main()
"""


def test_a_signal_as_the_file_opens_is_caught_and_the_file_removed(home):
    """Signals are caught from before the outputs open, not only once the run has begun: the deterministic
    form of the race the test above can meet on a loaded machine (the file left behind)."""
    import sys

    from cli_helpers import proc_env

    p = subprocess.run([sys.executable, "-c", OPEN_THEN_CTRL_C], cwd=home, env=proc_env(home / "home"),
                       capture_output=True, timeout=PATIENCE_S)
    lines = stderr_lines(p.stderr.decode())
    assert p.returncode == 130, lines
    assert not (home / "w.wav").exists()
    assert lines[0] == "omni: stopped: interrupted" and "omni: removed w.wav: no audio was written to it" in lines
