"""Signals at many moments of a long run: every WAV left behind is readable and holds whole chunks.

Each moment is chosen by what the process has observably done (its signal handlers installed, its
WAV grown past a size), never by wall-clock time alone: a loaded machine only makes waits longer.
"""

from __future__ import annotations

import random
import signal
import time
from pathlib import Path

import numpy as np
import pytest
from cli_helpers import LONG_TEXT, read_wav

HEADER = 44  # a 16-bit mono WAV's header
PATIENCE_S = 120.0  # generous: only a process that makes no progress at all runs into it


def _catches(pid: int, signum: int) -> bool:
    """Whether the process has a handler for signum: omni's entry point installs SIGTERM's first thing."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    mask = next(int(line.split()[1], 16) for line in status.splitlines() if line.startswith("SigCgt:"))
    return bool(mask >> (signum - 1) & 1)


def _wait_for(p, reached, what: str) -> None:
    """Poll until reached() or the process has ended; a process stuck for PATIENCE_S fails the test."""
    deadline = time.monotonic() + PATIENCE_S
    while not reached() and p.poll() is None:
        if time.monotonic() > deadline:
            pytest.fail(f"no progress in {PATIENCE_S:.0f} s waiting for {what}")
        time.sleep(0.005)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return -1


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads signal masks from /proc")
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL], ids=["INT", "TERM", "KILL"])
def test_a_signal_at_any_moment_leaves_a_valid_file_of_whole_chunks(spawn, home, solo, program, signum):
    expected = solo(LONG_TEXT)
    chunk_samples = program.card.loops["vocoder"].chunk_codes * program.roles["vocoder"].samples_per_code
    full = HEADER + 2 * expected.size
    rng = random.Random(int(signum))
    # start-up (handlers just installed), the file just created, two mid-run sizes, the last chunk
    targets = [None, 0, *(int(full * rng.uniform(0.05, 0.9)) for _ in range(2)), full - 2 * chunk_samples]
    outcomes = []
    for k, target in enumerate(targets):
        path = home / f"kill{k}.wav"
        p = spawn("speak", LONG_TEXT, "-o", path.name, "-q")
        if target is None:
            # past the interpreter's own start-up (a signal there is Python's, not omni's)
            _wait_for(p, lambda pid=p.pid: _catches(pid, signal.SIGTERM), "omni's signal handlers")
        else:
            _wait_for(p, lambda path=path, least=target: _size(path) >= max(least, 0),
                      f"{path.name} to reach {target} bytes")
        p.send_signal(signum)
        code = p.wait(timeout=PATIENCE_S)
        err = p.stderr.read()
        assert b"Traceback" not in err, err
        if not path.exists():
            # killed during start-up: by the signal itself (before Python is up) or by 128 + N
            assert code in (-int(signum), 128 + int(signum)), (code, err)
            outcomes.append("no file")
            continue
        _, samples = read_wav(path)  # the header agrees with the bytes on disk
        if signum != signal.SIGKILL:
            # 0: it had already finished; -N: it had, and the signal hit the interpreter's own
            # shutdown (Python puts the default handlers back while it finalizes)
            assert code in (0, 128 + int(signum)) or (code == -int(signum) and samples.size == expected.size), (code, err)
        whole = samples.size % chunk_samples == 0 or samples.size == expected.size
        assert whole, f"{samples.size} samples is not a whole number of chunks"
        assert np.array_equal(samples, expected[: samples.size])
        outcomes.append(samples.size)
    # the moments really were spread out: some early, some with audio written
    assert any(o == "no file" or o == 0 for o in outcomes) or len(set(outcomes)) > 2, outcomes
    assert any(isinstance(o, int) and o > 0 for o in outcomes), outcomes


def test_help_promises_a_readable_file_after_a_kill_for_wav_and_raw_not_flac(omni):
    """`.flac` once sat in the sentence promising a header valid after every chunk and a file
    readable after a kill; a FLAC mid-run reads 0 samples and one left by SIGKILL is unreadable."""
    text = " ".join(omni("speak", "--help").stdout.split())
    promise = next(s for s in text.split(". ") if "killed" in s)
    assert "WAV" in promise and "raw" in promise and "FLAC" not in promise and ".flac" not in promise
    assert "A FLAC, MP3, Opus or AAC file is complete once the run ends (Ctrl-C and SIGTERM included)" in text
    assert "not promised to be readable" in text


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads signal masks from /proc")
def test_a_flac_stopped_by_sigint_mid_run_is_complete_with_the_audio_so_far(spawn, home, solo):
    """What the help promises FLAC: Ctrl-C finalizes it, holding exactly the samples made so far."""
    import soundfile

    expected = solo(LONG_TEXT)
    path = home / "long.flac"
    p = spawn("speak", LONG_TEXT, "-o", path.name, "-q")
    _wait_for(p, lambda: _size(path) > 20_000, f"{path.name} to grow")  # FLAC frames are being written
    p.send_signal(signal.SIGINT)
    assert p.wait(timeout=PATIENCE_S) in (0, 130), p.stderr.read()
    samples, rate = soundfile.read(str(path), dtype="int16")
    assert rate == 24000 and 0 < samples.size
    assert np.array_equal(samples, expected[: samples.size])
