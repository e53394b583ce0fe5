"""A text of any length is one utterance: split a window at a time, each sentence let go once used."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from omni_cli.loops import sentences
from omni_cli.loops.channel import Channel
from omni_cli.loops.frame_decode import AudioStream
from omni_cli.loops.sentences import SentenceFeed, window_end
from omni_cli.spec import SpeakRequest, SpecError
from omni_cli.spec.stream import AudioChunk

ROOT = Path(__file__).resolve().parents[2]
TEXT = ("The first sentence is here. Dr. Smith paid $4.50 today! Is it 10:30 yet? "
        "A fourth one follows, with a comma. Then a fifth. And the last one ends it.")


def test_a_window_ends_after_a_sentence_else_at_a_space():
    text = "One two. Three four five. Six seven eight nine ten eleven."
    assert window_end(text, 0, 1000) == len(text)
    assert text[:window_end(text, 0, 30)] == "One two. Three four five. "
    assert text[:window_end(text, 0, 20)] == "One two. "
    cut = window_end(text, 26, 20)  # no sentence end in the window: its last space
    assert text[26:cut] == "Six seven eight "
    assert window_end("We met Dr. Smith there. He", 0, 25) == len("We met Dr. Smith there. ")
    assert window_end("We met Dr. Smith there", 0, 15) == len("We met Dr. ")  # its last space
    assert window_end("x" * 50, 0, 20) == 20  # no space at all: the window's length


def test_a_stream_feed_lets_go_of_what_its_reader_used_and_audio_is_not_kept():
    channel: Channel = Channel("frames")
    feed = SentenceFeed(channel, "stream")
    for i in range(3):
        channel.put(np.ones(4) * i)
    feed.done_with(0)
    feed.done_with(1)
    assert channel.items[0] is None and channel.items[1] is None and feed.item(2) is not None
    heard = []
    audio = AudioStream("audio")
    audio.listen(heard.append)
    audio.put("chunk")
    assert heard == ["chunk"] and audio.items == [None]


@pytest.fixture
def small_windows(monkeypatch):
    monkeypatch.setattr(sentences, "WINDOW_CHARS", 40)


def speak(program, text: str):
    from omni_cli.engine import Engine

    engine = Engine(program)
    handle = engine.submit(SpeakRequest(text, seed=3))
    held = 0  # sentences' frames and phonemes held at once, at any step
    samples = []
    for event in engine.events():
        wired = engine.inspect(handle.request_id)
        if wired is not None:
            held = max(held, sum(1 for slot in wired.slots.values() if isinstance(slot, Channel)
                                 for item in slot.items if item is not None))
        if isinstance(event, AudioChunk):
            samples.append(event.samples)
    return np.concatenate(samples), held


def test_a_text_split_in_many_windows_sounds_as_one_window_and_holds_little(voice, monkeypatch):
    whole, _ = speak(voice, TEXT)
    monkeypatch.setattr(sentences, "WINDOW_CHARS", 40)
    windowed, held = speak(voice, TEXT)
    assert whole.size > 0 and np.array_equal(windowed, whole)
    assert held <= 3  # a sentence's phonemes, its frames and the next sentence's phonemes at most


def test_a_window_with_nothing_readable_is_skipped_and_a_text_with_nothing_fails(voice, small_windows):
    from omni_cli.engine import Engine

    text = "Hello there, my friend. " + "\u263a " * 40 + "Goodbye for now, friend."
    result = Engine(voice).submit(SpeakRequest(text), collect=True).result()
    assert result.text.startswith("Hello there") and result.text.endswith("Goodbye for now, friend.")
    with pytest.raises(SpecError, match="no word the voice can read"):  # refused before it runs: bad input
        Engine(voice).submit(SpeakRequest("\u263a " * 60), collect=True)


def omni(*args: str, cwd) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMNI_CARD": "qwen2_5_omni_toy"}
    return subprocess.run([sys.executable, "-m", "omni_cli.cli", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)


def test_speak_i_reads_a_file_as_one_utterance_and_refuses_bad_input_in_one_line(tmp_path):
    (tmp_path / "in.txt").write_text("Hello there.\nSecond line, same utterance.\n")
    done = omni("speak", "-i", "in.txt", "-o", "out.wav", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(records) == 1 and records[0]["status"] == "finished" and (tmp_path / "out.wav").stat().st_size > 44
    (tmp_path / "bad.txt").write_bytes(b"caf\xe9\n")
    (tmp_path / "long.txt").write_text("word " * 1000)  # over the toy card's limit: it cannot split
    for args, says in ((["-i", "bad.txt"], "not UTF-8"), (["-i", "missing.txt"], "cannot read"),
                       (["Hi", "-i", "in.txt"], "not both"), (["-i", "long.txt"], "over the card's limit")):
        refused = omni("speak", *args, "-o", "x.wav", cwd=tmp_path)
        assert refused.returncode == 2 and says in refused.stderr, refused.stderr
        assert refused.stderr.count("\n") == 1 and "Traceback" not in refused.stderr
