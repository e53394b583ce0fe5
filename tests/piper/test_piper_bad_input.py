"""Text the voice cannot read is bad input, refused before anything runs (exit 2, one line; HTTP 400), and a
number of any length is spoken: past what gruut's number reader takes, digit by digit."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
UNREADABLE = {"punctuation": "...!? -- ;", "emoji": "😀🎉", "hebrew": "שלום עולם", "chinese": "你好，世界。"}
LONG_NUMBER = "123456789012345678901234567890123"  # 33 digits: gruut's decimal reader failed the whole sentence


def omni(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMNI_", "PYTEST_"))}
    env.update(PYTHONPATH=str(ROOT), HOME=str(cwd), COLUMNS="80")
    return subprocess.run([sys.executable, "-m", "omni_cli.cli", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)


@pytest.fixture(scope="module")
def phonemizer(quiet_voice):
    return quiet_voice.roles["phonemizer"]


@pytest.mark.parametrize("kind", sorted(UNREADABLE))
def test_text_with_nothing_to_read_is_exit_2_in_one_line(tmp_path, kind):
    done = omni("speak", UNREADABLE[kind], "-o", "x.wav", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("omni: error: ") and len(done.stderr.splitlines()) == 1, done.stderr
    assert "no word the voice can read" in done.stderr and not (tmp_path / "x.wav").exists()


def test_the_check_names_what_it_dropped_and_lets_any_latin_word_through(phonemizer):
    assert "(dropped: 你好世界。)" in phonemizer.unreadable(UNREADABLE["chinese"])
    for text in UNREADABLE.values():
        assert phonemizer.unreadable(text) is not None
    for text in ("Hi 你好", "café", "x²", "42", "A."):
        assert phonemizer.unreadable(text) is None


def test_an_unreadable_request_is_400_through_serve(quiet_voice):
    import httpx

    sys.path.insert(0, str(ROOT / "tests" / "serve"))
    from serve_helpers import serve

    served = serve(quiet_voice, concurrency=2, max_queue=4)
    try:
        refused = httpx.post(served.url + "/v1/audio/speech", json={"model": "piper_joe", "input": "你好"}, timeout=60)
        fine = httpx.post(served.url + "/v1/audio/speech", json={"model": "piper_joe", "input": "Hi."}, timeout=60)
    finally:
        served.server.stop()
    assert refused.status_code == 400, refused.text
    error = refused.json()["error"]
    assert error["type"] == "invalid_request_error" and "no word the voice can read" in error["message"]
    assert fine.status_code == 200 and len(fine.content) > 1000


@pytest.mark.parametrize("text", [f"I have {LONG_NUMBER} apples.", "1e300 or 9.9e99", "0.5 and " + "9" * 40 + ".25"])
def test_a_number_of_any_length_is_read(phonemizer, text):
    read = phonemizer.read(text)
    assert len(read.phoneme_ids) > 20 and "Error" not in read.text


def test_long_numbers_are_read_digit_by_digit_short_ones_as_numbers(phonemizer):
    from omni_cli.backends.piper.text import spell_long_numbers

    assert spell_long_numbers("pay 999,999,999,999,999 now") == "pay 999,999,999,999,999 now"  # 15 digits
    assert spell_long_numbers("id 1234567890123456.") == "id  1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 ."
    words = phonemizer.read(f"I have {LONG_NUMBER} apples.").text.split()
    assert words[2:5] == ["one", "two", "three"] and words[-1] == "apples."


def test_a_long_number_is_spoken_from_the_command_line(tmp_path):
    done = omni("speak", f"Call {LONG_NUMBER}.", "-o", "n.wav", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and (tmp_path / "n.wav").stat().st_size > 44
