"""Signals at many moments of a long run: every WAV left behind is readable and holds whole chunks."""

from __future__ import annotations

import random
import signal
import time

import numpy as np
import pytest
from cli_helpers import LONG_TEXT, read_wav

CHUNK_SAMPLES = 10 * 480  # the toy card's vocoder chunk: 10 codes of 480 samples
MOMENTS = 6  # kill points per signal, spread over start-up, mid-run and the end


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL], ids=["INT", "TERM", "KILL"])
def test_a_signal_at_any_moment_leaves_a_valid_file_of_whole_chunks(spawn, home, solo, signum):
    expected = solo(LONG_TEXT)
    rng = random.Random(int(signum))
    outcomes = []
    for k in range(MOMENTS):
        path = home / f"kill{k}.wav"
        p = spawn("speak", LONG_TEXT, "-o", path.name, "-q")
        # k = 0: while omni is still importing. Earlier than ~0.1 s the signal can land in the
        # interpreter's own start-up (site import), before any omni code runs: that is Python's.
        time.sleep(rng.uniform(0.15, 1.5) if k else 0.15)
        p.send_signal(signum)
        code = p.wait(timeout=60)
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
        whole = samples.size % CHUNK_SAMPLES == 0 or samples.size == expected.size
        assert whole, f"{samples.size} samples is not a whole number of chunks"
        assert np.array_equal(samples, expected[: samples.size])
        outcomes.append(samples.size)
    # the moments really were spread out: some early, some with audio written
    assert any(o == "no file" or o == 0 for o in outcomes) or len(set(outcomes)) > 2, outcomes
    assert any(isinstance(o, int) and o > 0 for o in outcomes), outcomes
