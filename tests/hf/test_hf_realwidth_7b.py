"""The Qwen2.5-Omni-7B shape (every width as released, depth cut): built, spoken, equal to generate.

About 2 minutes on 2 cores: building takes ~1.5 min and 9 GB, loading ~11 GB (in child processes, so
the suite's own memory stays what it was); the checkpoint (3.6 GB) is removed afterwards. Chat mode,
batching, stream = barrier and bf16 are checked on the 3B shape (test_hf_realwidth.py): the code
paths are the same, only the widths differ.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import wave
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
RELEASED_7B = [152064, 3584, 28, 4]  # thinker vocabulary, hidden size, attention heads, KV heads


def child(*args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    # one intra-op thread for ours and generate alike: our components default to one, torch to one per
    # core, and at 7B width BigVGAN's sums then round differently (6.6e-7 at peak 0.35, measured)
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=ROOT, timeout=timeout,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"})


@pytest.fixture(scope="module")
def checkpoint_7b(tmp_path_factory):
    directory = tmp_path_factory.mktemp("qwen2_5_omni_7b_width")
    built = child("-m", "omni_cli.backends.hf.realwidth", "7b", str(directory))
    assert built.returncode == 0, built.stderr
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


def test_greedy_echo_equals_generate_at_7b_width(checkpoint_7b, tmp_path):
    done = child("tests/hf/realwidth_7b_check.py", str(checkpoint_7b), str(tmp_path))
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["widths"] == RELEASED_7B
    ours, theirs = result["thinker"]
    assert ours == theirs and len(ours) > 1
    ours, theirs = result["talker"]
    assert ours == theirs and result["talker_ended_by_itself"]
    assert result["num_samples"][0] == result["num_samples"][1] == 480 * (len(theirs) - 1) > 0
    assert result["samples_equal"], result["max_abs_diff"]


def test_omni_speak_with_the_shipped_card_at_7b_width(checkpoint_7b, tmp_path):
    out = tmp_path / "echo.wav"
    done = child("-m", "omni_cli.cli", "speak", "--card", "qwen2_5_omni", "--model-path", str(checkpoint_7b),
                 "-q", "-o", str(out), "hello there")
    assert done.returncode == 0, done.stderr
    with wave.open(str(out)) as wav:
        assert wav.getframerate() == 24000 and wav.getnframes() > 0 and wav.getnframes() % 480 == 0
