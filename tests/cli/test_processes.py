"""Real `omni` processes: files growing mid-run, signals, pipes, stdin read as it arrives."""

from __future__ import annotations

import json
import select
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import soundfile
from cli_helpers import LONG_TEXT, ROOT, parse_wav, proc_env, read_wav

HELLO = "Hello, world"
DEADLINE_S = 60


def wait_for(predicate, proc=None, timeout=DEADLINE_S, every=0.005):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = predicate()
        if value:
            return value
        if proc is not None and proc.poll() is not None:
            return predicate()
        time.sleep(every)
    raise AssertionError("timed out")


def samples_on_disk(path):
    try:
        return read_wav(path)[1].size
    except (FileNotFoundError, AssertionError, ValueError, Exception):  # not there yet, or header not yet written
        return 0


def test_the_wav_grows_valid_while_it_is_written(spawn, home, solo):
    p = spawn("speak", LONG_TEXT, "-o", "long.wav", "-q")
    seen, looked = [], None
    while p.poll() is None:
        try:
            info = (home / "long.wav").stat()
        except FileNotFoundError:
            info = None
        # each state of the file read once: re-reading an unchanged file of megabytes every 2 ms takes the core the
        # writer needs
        if info is not None and info.st_size >= 44 and (info.st_size, info.st_mtime_ns) != looked:
            looked = (info.st_size, info.st_mtime_ns)
            _, samples = read_wav(home / "long.wav")  # header agrees with the bytes on disk, every time
            if samples.size:
                assert soundfile.info(str(home / "long.wav")).frames >= samples.size  # it may have grown since
            seen.append(samples.size)
        time.sleep(0.002)
    assert p.wait() == 0, p.stderr.read()
    final = read_wav(home / "long.wav")[1]
    assert np.array_equal(final, solo(LONG_TEXT))
    assert seen == sorted(seen) and len({n for n in seen if 0 < n < final.size}) >= 2  # grew in steps, mid-run


@pytest.mark.parametrize("signum, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_stops_at_a_step_and_keeps_the_audio_so_far(spawn, home, solo, signum, code):
    p = spawn("speak", LONG_TEXT, "-o", "long.wav", "--trace", "t.jsonl")
    wait_for(lambda: samples_on_disk(home / "long.wav") > 0, p)
    p.send_signal(signum)
    out, err = p.communicate(timeout=DEADLINE_S)
    assert p.returncode == code, err
    reason = {signal.SIGINT: b"interrupted", signal.SIGTERM: b"terminated"}[signum]
    assert b"Traceback" not in err and b"omni: stopped: " + reason in err  # the summary says what happened
    assert b"(1 stopped)" in err
    _, samples = read_wav(home / "long.wav")
    expected = solo(LONG_TEXT)
    assert 0 < samples.size < expected.size and np.array_equal(samples, expected[: samples.size])
    last = json.loads((home / "t.jsonl").read_text().splitlines()[-1])
    assert last["phase"] == "cancelled"


def test_sigkill_leaves_a_file_that_readers_accept(spawn, home, solo):
    p = spawn("speak", LONG_TEXT, "-o", "long.wav")
    wait_for(lambda: samples_on_disk(home / "long.wav") > 0, p)
    p.kill()
    p.wait()
    _, samples = read_wav(home / "long.wav")
    assert samples.size > 0 and np.array_equal(samples, solo(LONG_TEXT)[: samples.size])
    assert soundfile.info(str(home / "long.wav")).frames == samples.size
    if shutil.which("sox"):
        out = subprocess.run(["sox", "--i", "-s", str(home / "long.wav")], capture_output=True, text=True)
        assert out.returncode == 0 and int(out.stdout) == samples.size


def test_stdout_wav_stream_parses_in_a_pipe(spawn, solo):
    p = spawn("speak", HELLO, "-o", "-", "-q")
    out, err = p.communicate(timeout=DEADLINE_S)
    assert p.returncode == 0 and err == b""
    rate, samples = parse_wav(out)
    assert rate == 24000 and np.array_equal(samples, solo(HELLO))


@pytest.mark.parametrize("args", [["-o", "-"], ["-o", "-", "--format", "raw"], ["-o", "x.wav", "--mode", "echo"]])
def test_a_closed_stdout_pipe_exits_quietly_with_141(spawn, home, args):
    p = spawn("speak", LONG_TEXT, *args, "-q", "--force")
    first = p.stdout.read(1 if "x.wav" in args else 100)  # `| head -c 100`
    assert first
    p.stdout.close()
    assert p.wait(timeout=DEADLINE_S) == 141
    assert p.stderr.read() == b""  # no "Exception ignored", no traceback


def test_stdin_lines_are_spoken_as_they_arrive(spawn, home, solo):
    p = spawn("speak", "-", "-o", "out/", "--json", "-q", stdin=subprocess.PIPE)
    p.stdin.write(b"One.\n")
    p.stdin.flush()
    ready, _, _ = select.select([p.stdout], [], [], DEADLINE_S)  # line 1 is done while stdin is still open
    assert ready
    first = json.loads(p.stdout.readline())
    assert first["text"] == "One." and first["status"] == "finished"
    p.stdin.write("Two, ünïcode.\n".encode())
    p.stdin.close()
    rest = p.stdout.read().decode()
    assert p.wait(timeout=DEADLINE_S) == 0
    assert [json.loads(x)["text"] for x in rest.splitlines()] == ["Two, ünïcode."]
    assert np.array_equal(read_wav(home / "out" / "0002.wav")[1], solo("Two, ünïcode."))


def test_ctrl_c_while_waiting_for_stdin(spawn, home):
    p = spawn("speak", "-", "-o", "out/", "--trace", "t.jsonl", stdin=subprocess.PIPE)
    wait_for(lambda: (home / "t.jsonl").exists() and (home / "t.jsonl").read_text().strip(), p)
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=DEADLINE_S)
    assert p.returncode == 130 and b"Traceback" not in err


def test_help_starts_without_numpy_rich_or_torch():
    probe = ("import sys; sys.argv = ['omni', '--help']\n"
             "from omni_cli.cli.app import app\n"
             "try:\n    app()\nexcept SystemExit:\n    pass\n"
             "print(sorted(m for m in ('numpy', 'rich', 'torch', 'yaml', 'soundfile') if m in sys.modules), file=sys.stderr)")
    env = proc_env(ROOT)
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, cwd=ROOT)
    assert out.stderr.strip() == "[]" and "omni speak" in out.stdout
    # how fast it starts is `omni bench`'s figure (process start to help printed), never a timed assert here


def test_a_terminal_gets_the_live_view_and_then_the_text(home):
    import os
    import pty

    master, slave = pty.openpty()
    env = dict(proc_env(home / "home"), TERM="xterm", COLUMNS="100", LINES="30")
    p = subprocess.Popen([sys.executable, "-m", "omni_cli.cli", "speak", HELLO, "-o", "a.wav"], cwd=home, env=env,
                         stdin=subprocess.DEVNULL, stdout=slave, stderr=slave)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 1 << 16)
        except OSError:  # the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    assert p.wait(timeout=DEADLINE_S) == 0
    screen = b"".join(chunks).decode("utf-8", "replace")
    assert "\x1b[" in screen and "latest calls" in screen and "\nr1 " in screen  # a row per loop, per request
    tail = screen.split("\x1b[?25h")[-1]  # after the live view has given the cursor back
    assert "omni: 1 utterance" in tail
    assert HELLO + "\r\n" in screen  # the text, printed above the live view as soon as it finished
