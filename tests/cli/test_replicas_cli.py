"""`omni speak --replicas N`: one engine's files from N local processes; a dead replica, Ctrl-C, a closed pipe."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from cli_helpers import LONG_TEXT, read_wav, stderr_lines

LINES = ["Hello, world.", "A somewhat longer sentence, to make the lengths ragged.", "Ünïcödé and 日本語 text.",
         "Short.", "Another line that the second replica may take.", "The last one."]
TIMING = ("ttfa_s", "latency_s", "first_audio_after_line_s")
DEADLINE_S = 90


def records(stdout: str) -> list[dict]:
    """The --json lines without the fields that measure time (those differ between any two runs)."""
    return [{k: v for k, v in json.loads(line).items() if k not in TIMING} for line in stdout.splitlines()]


def files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_two_replicas_write_one_engine_s_files_and_json(omni, home):
    text = "\n".join(LINES) + "\n"
    one = omni("speak", "-", "--out-dir", "one", "--json", "-q", "--seed", "7", input=text)
    two = omni("speak", "-", "--out-dir", "two", "--json", "-q", "--seed", "7", "--replicas", "2", "-j", "2",
               input=text)
    assert one.exit_code == 0 and two.exit_code == 0, (one.stderr, two.stderr)
    expected = files(home / "one")
    assert list(expected) == [f"{i:04d}.wav" for i in range(1, len(LINES) + 1)]
    assert all(len(data) > 44 for data in expected.values())  # empty audio is never parity
    assert files(home / "two") == expected
    same_paths = [{**r, "path": r["path"].replace("one/", "two/")} for r in records(one.stdout)]
    assert records(two.stdout) == same_paths  # input order, same replies, samples and WorkUnits


def test_a_bad_line_stops_the_input_there_as_with_one_engine(omni, home):
    text = "One.\nTwo.\n" + "x" * 2500 + "\nFour.\n"  # line 3 is over the card's 2000 characters
    one = omni("speak", "-", "--out-dir", "one", "--json", "-q", input=text)
    two = omni("speak", "-", "--out-dir", "two", "--json", "-q", "--replicas", "2", input=text)
    assert one.exit_code == two.exit_code == 2
    assert stderr_lines(two.stderr) == stderr_lines(one.stderr) and "line 3:" in two.stderr
    assert files(home / "two") == files(home / "one") and len(files(home / "one")) == 2


@pytest.mark.parametrize("value", ["0", "65", "two"])
def test_a_bad_replica_count_is_one_line_and_exit_2(omni, home, value):
    result = omni("speak", "Hi", "--out-dir", "out", "--replicas", value)
    assert result.exit_code == 2, result.stderr
    lines = stderr_lines(result.stderr)
    assert len(lines) == 1 and "--replicas" in lines[0] and "Traceback" not in result.stderr
    assert not (home / "out").exists()


def replica_pids(pid: int) -> list[int]:
    """The spawned replica processes among `pid`'s children (not multiprocessing's resource tracker)."""
    children = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        children += [int(c) for c in (task / "children").read_text().split()]
    return [c for c in children if b"spawn_main" in Path(f"/proc/{c}/cmdline").read_bytes()]


def wait_for(predicate, proc, timeout=DEADLINE_S):
    end = time.monotonic() + timeout
    while time.monotonic() < end and proc.poll() is None:
        value = predicate()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError(f"timed out (exit {proc.poll()}): {proc.stderr.read().decode() if proc.poll() else ''}")


def test_a_killed_replica_fails_its_lines_keeps_the_finished_ones_and_exits_1(spawn, home):
    p = spawn("speak", "-", "--out-dir", "out", "--json", "-q", "--replicas", "2", "-j", "1", stdin=subprocess.PIPE)
    p.stdin.write(b"First line.\nSecond line.\n")  # one on each replica
    p.stdin.flush()
    done = [json.loads(p.stdout.readline()) for _ in range(2)]
    assert [r["status"] for r in done] == ["finished", "finished"]
    victims = wait_for(lambda: replica_pids(p.pid), p)
    assert len(victims) == 2
    os.kill(victims[0], signal.SIGKILL)
    # both replicas look idle: one of these lines goes to the dead one
    out, err = p.communicate(b"Third line.\nFourth line.\n", timeout=DEADLINE_S)
    assert p.returncode == 1, err
    rest = [json.loads(line) for line in out.decode().splitlines()]
    assert sorted(r["status"] for r in rest) == ["failed", "finished"]
    assert "its worker process died" in next(r["error"] for r in rest if r["status"] == "failed")
    errors = stderr_lines(err.decode())
    assert any("omni: error: line" in e and "replica" in e and "died" in e for e in errors), err
    assert b"Traceback" not in err
    for record in done:  # what finished before the replica died is kept, whole
        _, samples = read_wav(record["path"] if Path(record["path"]).is_absolute() else home / record["path"])
        assert samples.size == record["num_samples"] > 0


def test_ctrl_c_cancels_every_replica_and_keeps_the_audio_so_far(spawn, home):
    p = spawn("speak", "-", "--out-dir", "out", "-q", "--replicas", "2", stdin=subprocess.PIPE)
    p.stdin.write(f"{LONG_TEXT}\n{LONG_TEXT}\n".encode())
    p.stdin.flush()

    def both_started():
        sizes = [(home / "out" / f"000{i}.wav") for i in (1, 2)]
        return all(f.exists() and f.stat().st_size > 44 for f in sizes)

    wait_for(both_started, p)
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=DEADLINE_S)
    assert p.returncode == 130, err
    assert b"Traceback" not in err
    for i in (1, 2):  # each file valid, with what was made before the cancel
        assert read_wav(home / "out" / f"000{i}.wav")[1].size > 0


def test_a_closed_stdout_pipe_exits_141_with_replicas(spawn, home):
    p = spawn("speak", "-", "-o", "-", "-q", "--replicas", "2", stdin=subprocess.PIPE)
    p.stdin.write(f"{LONG_TEXT}\n{LONG_TEXT}\n".encode())
    p.stdin.close()
    assert p.stdout.read(100)  # `| head -c 100`
    p.stdout.close()
    assert p.wait(timeout=DEADLINE_S) == 141
    assert p.stderr.read() == b""


def running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"  # a zombie has exited; only its parent's wait is missing


@pytest.mark.parametrize("args, workers", [(["--replicas", "2"], 2), (["--placement", "process"], 3)])
def test_worker_processes_exit_when_omni_is_killed_outright(spawn, home, args, workers):
    p = spawn("speak", "-", "--out-dir", "out", "-q", *args, stdin=subprocess.PIPE)
    victims = wait_for(lambda: len(replica_pids(p.pid)) == workers and replica_pids(p.pid), p)
    p.kill()  # SIGKILL: no handler runs, nothing closes the workers' queues
    p.wait()
    end = time.monotonic() + 20
    while any(running(v) for v in victims) and time.monotonic() < end:
        time.sleep(0.1)
    assert not [v for v in victims if running(v)], "a worker process outlived omni"
