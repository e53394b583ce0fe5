"""Issue 18: `--dtype bfloat16` on the tiny checkpoint gave 0.00 s of audio with exit 0 and no word.

Its talker is random: sampling as the shipped card does, with seed 4 the prefill of "a" draws codec PAD,
one of the talker's end ids, in float32 and bfloat16 alike (README, "A real Qwen2.5-Omni checkpoint"),
so the request ends with no audio. `omni speak` must say so and exit 1, unless --allow-no-audio.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def speak(checkpoint: Path, out: Path, *more: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "omni_cli.cli", "speak", "a", "--card", "qwen2_5_omni", "--model-path",
           str(checkpoint), "--seed", "4", "--json", "-o", str(out), *more]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    return subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=300, env=env)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_a_talker_that_ends_at_once_is_reported_and_exits_1(tiny_checkpoint, tmp_path, dtype):
    out = tmp_path / "a.wav"
    done = speak(tiny_checkpoint, out, "--dtype", dtype)
    assert done.returncode == 1, done.stderr
    [record] = [json.loads(line) for line in done.stdout.splitlines()]
    assert (record["status"], record["num_samples"]) == ("no_audio", 0)
    assert "talker_decode eos after 1 WorkUnit;" in record["reason"]  # its prefill drew the end code
    assert f"omni: error: no audio: {record['reason']} (--allow-no-audio accepts it)" in done.stderr
    assert "no audio was written" in done.stderr and not out.exists()


def test_allow_no_audio_accepts_it(tiny_checkpoint, tmp_path):
    out = tmp_path / "a.wav"
    done = speak(tiny_checkpoint, out, "--allow-no-audio")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["status"] == "no_audio"
    assert "omni: warning: no audio: " in done.stderr and out.stat().st_size == 44  # a valid WAV of no samples
