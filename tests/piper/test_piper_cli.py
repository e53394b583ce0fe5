"""The voice from the command line: the README's first command speaks words, the default is shown,
warnings and refusals are one line each."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]


def omni(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """`omni` in a subprocess with no OMNI_CARD: the card a new user gets."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMNI_", "PYTEST_"))}
    env.update(PYTHONPATH=str(ROOT), HOME=str(cwd), COLUMNS="80")
    return subprocess.run([sys.executable, "-m", "omni_cli.cli", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)


@pytest.mark.slow
def test_the_readme_first_command_says_hello_world(tmp_path):
    import soundfile as sf
    from asr import Recogniser, words

    done = omni("speak", "Hello, world", "-o", "hello.wav", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Hello, world\n"
    samples, rate = sf.read(tmp_path / "hello.wav", dtype="float32")
    assert rate == 22050 and 0.5 < len(samples) / rate < 3.0
    assert np.abs(samples).max() > 0.1  # speech, not silence
    assert words(Recogniser().transcribe(samples, rate)) == ["hello", "world"]


def test_cards_list_marks_the_default(tmp_path):
    done = omni("cards", "list", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    rows = {line.split()[0]: line for line in done.stdout.splitlines()[1:]}
    assert "(default)" in rows["piper_joe"] and "(default)" not in rows["qwen2_5_omni_toy"]
    assert "joe" in rows["piper_joe"].split()


@pytest.mark.slow
def test_unreadable_characters_warn_on_one_line_and_raw_json_names_the_rate(tmp_path):
    done = omni("speak", "Hi ☃ there.", "-o", "hi.raw", "--format", "raw", "--json", "--card", "piper_joe", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "omni: warning: dropped characters the phonemizer cannot read: ☃" in done.stderr.splitlines()
    assert "Traceback" not in done.stderr
    record = json.loads(done.stdout)
    assert record["sample_rate"] == 22050 and record["text"] == "Hi ☃ there."
    assert (tmp_path / "hi.raw").stat().st_size == 2 * record["num_samples"]  # s16le mono at that rate


def test_json_record_has_the_voice_rate_and_speed_shortens(tmp_path):
    slow = omni("speak", "One, two, three.", "-o", "a.wav", "--json", "--speed", "0.5", cwd=tmp_path)
    fast = omni("speak", "One, two, three.", "-o", "b.wav", "--json", "--speed", "2", cwd=tmp_path)
    assert slow.returncode == 0 and fast.returncode == 0, slow.stderr + fast.stderr
    slow_rec, fast_rec = json.loads(slow.stdout), json.loads(fast.stdout)
    assert slow_rec["sample_rate"] == fast_rec["sample_rate"] == 22050
    assert slow_rec["duration_s"] > 3 * fast_rec["duration_s"]  # VITS durations scale by 1/speed


def test_speed_on_a_card_without_it_is_one_line_and_exit_2(tmp_path):
    done = omni("speak", "Hi", "--card", "qwen2_5_omni_toy", "--speed", "2", "-o", "t.wav", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == ["omni: error: <request>: speed: card 'qwen2_5_omni_toy' has no "
                                                "speed control (a sentence voice has)"]
