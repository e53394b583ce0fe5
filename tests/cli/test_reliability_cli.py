"""Careless or hostile input to real `omni` processes: endless prompt sources, damaged rollout samples, typos in
`--set`'s parent keys, a reader that leaves before the first byte. Each ends in one line and its exit code."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest
from cli_helpers import proc_env

MAX_RSS_KIB = 1 << 20  # 1 GiB: the toy card's run takes a fraction; reading a source whole took all it could


def _omni(*args: str, home: Path, **popen) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "omni_cli.cli", *args], cwd=home, env=proc_env(home),
                            stdout=popen.pop("stdout", subprocess.PIPE), stderr=subprocess.PIPE, **popen)


def _wait(proc: subprocess.Popen, timeout_s: float = 120) -> tuple[int, int, str]:
    """(exit code, peak RSS in KiB, stderr) of a child: its own memory's high-water mark, read while it runs.
    (wait4's ru_maxrss would carry the size of the process that spawned it, gigabytes in a test worker that
    has loaded a real-width model.)"""
    deadline, peak = time.monotonic() + timeout_s, 0
    while True:
        peak = max(peak, _high_water_kib(proc.pid))
        pid, status, _ = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() > deadline:
            proc.kill()
            pytest.fail("omni did not end")
        time.sleep(0.02)
    proc.returncode = os.waitstatus_to_exitcode(status)
    stderr = proc.stderr.read().decode()
    return proc.returncode, peak, stderr


def _high_water_kib(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0  # it has ended (or has no memory of its own any more)


def test_rollout_of_dev_zero_is_one_line_about_the_line_and_bounded_memory(tmp_path):
    code, rss, stderr = _wait(_omni("rollout", "/dev/zero", "-o", "out", home=tmp_path))
    assert code == 2 and stderr == "omni: error: /dev/zero:1: a line of more than 65,536 bytes (one prompt per line)\n"
    assert 0 < rss < MAX_RSS_KIB


def test_rollout_of_an_endless_pipe_runs_as_it_reads_and_stops_on_sigterm(tmp_path):
    endless = subprocess.Popen([sys.executable, "-c", "import sys\nwhile True: sys.stdout.write('Hi there.\\n')"],
                               stdout=subprocess.PIPE)
    try:
        proc = _omni("rollout", "-", "-k", "1", "-o", "out", "-q", home=tmp_path, stdin=endless.stdout)
        endless.stdout.close()  # the child holds the only reading end
        manifest = tmp_path / "out" / "rollout.jsonl"
        deadline, peak = time.monotonic() + 120, 0
        while not (manifest.exists() and manifest.read_text().count("\n") >= 2):  # samples saved while it reads
            assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read().decode()
            peak = max(peak, _high_water_kib(proc.pid))
            time.sleep(0.1)
        peak = max(peak, _high_water_kib(proc.pid))
        proc.send_signal(signal.SIGTERM)
        code, rss, stderr = _wait(proc, 30)
        rss = max(rss, peak)
    finally:
        endless.kill()
        endless.wait()
    assert code == 143 and "Traceback" not in stderr
    assert 0 < rss < MAX_RSS_KIB


@pytest.fixture(scope="module")
def sample(tmp_path_factory) -> Path:
    """One toy rollout sample, as `omni rollout` writes it."""
    home = tmp_path_factory.mktemp("rollout")
    (home / "p.txt").write_text("Hi\n")
    code, _, stderr = _wait(_omni("rollout", "p.txt", "-k", "1", "-o", "run", "-q", home=home))
    assert code == 0, stderr
    return home / "run" / "p0001_s001.npz"


def _rewrite(source: Path, target: Path, change) -> None:
    with np.load(source, allow_pickle=False) as data:
        arrays = {key: data[key] for key in data.files}
    change(arrays)
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target, "wb") as f:
        np.savez(f, **arrays)


def _meta(edit):
    def change(arrays):
        meta = json.loads(str(arrays["meta"]))
        edit(meta)
        arrays["meta"] = np.array(json.dumps(meta))
    return change


DAMAGE = {
    "cut short": (None, "not a rollout sample"),
    "a column missing": (lambda a: a.pop("thinker_decode/logprob"), "thinker_decode/logprob is missing"),
    "tokens as floats": (lambda a: a.update({"thinker_decode/token": a["thinker_decode/token"].astype(np.float32)}),
                         "thinker_decode/token is float32"),
    "columns of two lengths": (lambda a: a.update({"talker_decode/entropy": a["talker_decode/entropy"][:1]}),
                               "talker_decode's columns differ in length"),
    "the seed a string": (_meta(lambda m: m["request"].update(seed="7")), "request.seed is missing or of the wrong type"),
    "no request": (_meta(lambda m: m.pop("request")), "header's request is missing"),
    "audio of another shape": (lambda a: a.update(audio=np.zeros((2, 2), np.float32)), "audio is float32 of shape"),
    "a pickle": (lambda a: a.update(audio=np.array([{"x": 1}], dtype=object)), "not a rollout sample"),
}


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_a_damaged_rollout_sample_is_bad_input_naming_the_file_and_what_is_wrong(sample, tmp_path, damage):
    edit, said = DAMAGE[damage]
    target = tmp_path / "run" / sample.name
    if edit is None:
        target.parent.mkdir()
        target.write_bytes(sample.read_bytes()[:sample.stat().st_size // 2])
    elif damage == "a pickle":  # np.savez would refuse nothing: write the object array as numpy would pickle it
        with np.load(sample, allow_pickle=False) as data:
            arrays = {key: data[key] for key in data.files}
        arrays["audio"] = np.array([{"x": 1}], dtype=object)
        target.parent.mkdir()
        np.savez(target, **arrays)
        assert zipfile.is_zipfile(target)
    else:
        _rewrite(sample, target, edit)
    code, _, stderr = _wait(_omni("rollout", "score", "run", home=tmp_path))
    assert code == 2, stderr
    assert stderr.startswith(f"omni: error: {Path('run') / sample.name}: ") and said in stderr
    assert len(stderr.splitlines()) == 1


@pytest.mark.parametrize("given", ["loop.x=1", "loops.vocodr.chunk_codes=4", "components.vocodr.params.x=1"])
def test_a_typo_in_a_parent_key_of_set_names_set_not_a_line_of_the_card(tmp_path, given):
    code, _, stderr = _wait(_omni("speak", "Hi", "--set", given, "-o", "x.wav", home=tmp_path))
    assert code == 2 and stderr.startswith("omni: error: --set: ") and ".yaml" not in stderr, stderr
    assert len(stderr.splitlines()) == 1


@pytest.mark.parametrize("fmt", ["wav", "raw"])
def test_a_reader_gone_before_the_first_byte_is_a_quiet_141(tmp_path, fmt):
    read, write = os.pipe()
    os.close(read)  # `omni speak ... -o - | true`: the reader has left before anything is written
    try:
        proc = _omni("speak", "Hello", "-o", "-", "--format", fmt, home=tmp_path, stdout=write)
    finally:
        os.close(write)
    code, _, stderr = _wait(proc)
    assert code == 141 and "error" not in stderr and "Traceback" not in stderr, stderr
    if fmt == "wav":  # the header is the first write: the run ends before it begins, without a word
        assert stderr == ""
