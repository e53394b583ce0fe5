"""`omni chat --history` keeps each clip's encoding in the cache: the next run encodes only its new clip, says
what it reused (stderr, --json), and answers as a run with the store turned off does; a cut entry is one note."""

from __future__ import annotations

import json

import pytest
from cli_helpers import read_wav, stderr_lines
from test_chat import TOY, question

ANSWER = ("--max-tokens", "6", "--allow-truncation", "-q")


@pytest.fixture
def cache(home, monkeypatch):
    folder = home / "cache"
    monkeypatch.setenv("OMNI_CLI_CACHE", str(folder))
    return folder


def talk(omni, history: str, audio: str, out: str, *more):
    result = omni("chat", "-c", TOY, "--audio", audio, "--history", history, "-o", out, *ANSWER, *more)
    assert result.exit_code == 0, result.stderr
    return result


def test_the_second_run_encodes_only_the_new_clip_and_says_so(omni, home, cache, monkeypatch):
    question(home / "q1.wav", seconds=2.5)  # three 1 s blocks
    question(home / "q2.wav", seconds=1.6)  # two
    talk(omni, "h.jsonl", "q1.wav", "a1.wav")
    (home / "plain.jsonl").write_text((home / "h.jsonl").read_text())  # the same conversation, to run uncached
    second = omni("chat", "-c", TOY, "--audio", "q2.wav", "--history", "h.jsonl", "-o", "a2.wav", "--json",
                  "--max-tokens", "6", "--allow-truncation")
    assert second.exit_code == 0, second.stderr
    record = json.loads(second.stdout)
    assert record["work_units"]["audio_encode"] == 2 and record["reused"] == {"clips": 1, "audio_s": 2.5}
    assert "omni: reused 1 encoded clip (2.5 s of audio) from the cache" in stderr_lines(second.stderr)
    monkeypatch.setenv("OMNI_CLI_ENCODED_CACHE_MIB", "0")  # the store off: every clip encoded again
    plain = omni("chat", "-c", TOY, "--audio", "q2.wav", "--history", "plain.jsonl", "-o", "b2.wav", "--json",
                 "--max-tokens", "6", "--allow-truncation")
    plain_record = json.loads(plain.stdout)
    assert plain_record["work_units"]["audio_encode"] == 5 and plain_record["reused"] == {}
    assert "reused" not in plain.stderr and plain_record["reply"] == record["reply"]
    assert read_wav(home / "a2.wav")[1].tobytes() == read_wav(home / "b2.wav")[1].tobytes()


def test_a_cut_entry_is_encoded_again_with_one_note(omni, home, cache):
    question(home / "q1.wav", seconds=2.5)
    question(home / "q2.wav", seconds=1.6)
    talk(omni, "h.jsonl", "q1.wav", "a1.wav")
    (entry,) = (cache / "encoded").glob("*/*.npz")
    entry.write_bytes(entry.read_bytes()[:100])
    second = omni("chat", "-c", TOY, "--audio", "q2.wav", "--history", "h.jsonl", "-o", "a2.wav",
                  "--max-tokens", "6", "--allow-truncation")
    assert second.exit_code == 0, second.stderr
    notes = [line for line in stderr_lines(second.stderr) if "cached" in line]
    assert notes == [f"omni: encoded again: the cached {entry} was not used (its bytes do not match the digest "
                     "omni recorded (cut short or edited))"]
    assert "Traceback" not in second.stderr and "reused" not in second.stderr


def test_a_typed_conversation_reads_the_earlier_runs_clip_from_the_cache(spawn, home):
    from test_chat_history import Terminal

    question(home / "q.wav", seconds=2.5)
    first = spawn("chat", "-c", TOY, "--audio", "q.wav", "--history", "talk.jsonl", *ANSWER)
    assert first.wait(120) == 0, first.stderr.read().decode()
    term = Terminal(spawn, "-c", TOY, "--history", "talk.jsonl", "--max-tokens", "6", "--allow-truncation")
    term.expect(b"> ")
    term.send(b"what was it?\n")
    term.expect(b"> ", 2)
    term.send(b"\x04")
    assert term.close() == 0
    assert b"omni: reused 1 encoded clip (2.5 s of audio) from the cache" in term.seen
