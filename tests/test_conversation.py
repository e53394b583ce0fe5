"""A chat request continues a conversation (toy card): the thinker prefills every earlier turn as the card's
template renders it, with each heard clip's whole-clip rows in place; a clip heard before is not encoded again;
stream ≡ barrier; the history file is read strictly and appended whole or not at all."""

import errno
import json
import os

import numpy as np
import pytest
from test_listen import clip, streamed

from omni_cli.api import load
from omni_cli.audio.source import AudioSource
from omni_cli.backends.base import AR_PREFILL, ImageRows
from omni_cli.backends.toy.thinker import AUDIO, AUDIO_BOS, AUDIO_EOS, BOS, CHAT, EOS, SPEAK
from omni_cli.conversation import HistoryError, Turn, append_turns, read_history
from omni_cli.engine import Engine
from omni_cli.spec import PriorTurn, SpeakRequest, SpecError

RATE = 16000


@pytest.fixture(scope="module")
def chat():
    return load("qwen2_5_omni_toy", "chat")


def whole(samples: np.ndarray) -> AudioSource:
    return AudioSource.whole(samples, RATE)


def prefilled_rows(program, request: SpeakRequest) -> tuple[np.ndarray, list[int], object]:
    """Every row the thinker prefilled (before its first reply token), the ids they stand for, and the result."""
    thinker = program.roles["thinker"]
    rows, ids, real_run = [], [], thinker.run

    def spy(kind, inputs):
        if kind == AR_PREFILL:
            for i in inputs:
                given = i.prefill.rows if isinstance(i.prefill, ImageRows) else i.prefill  # a picture: with its grid
                rows.append(thinker.embed_tokens(i.token_ids) if given is None else given)
                ids.extend(i.token_ids)
        return real_run(kind, inputs)

    thinker.run = spy
    try:
        result = Engine(program).submit(request, collect=True).result()
    finally:
        del thinker.run
    return np.concatenate(rows), ids, result


def test_earlier_turns_are_prefilled_as_the_template_renders_them(chat):
    first, second = clip(1.3, 1), clip(2.0, 2)  # the second ends on a block's edge (1 s blocks)
    history = (PriorTurn("user", "hi", (whole(first),)), PriorTurn("assistant", "yo"))
    request = SpeakRequest("and?", mode="chat", max_tokens=4, history=history, audio=streamed(second))
    rows, ids, result = prefilled_rows(chat, request)
    encoder, thinker = chat.roles["audio_encoder"], chat.roles["thinker"]
    a, b = encoder.encode_whole(first), encoder.encode_whole(second)
    # BOS; user: CHAT, its clip, its text; assistant: SPEAK, its text, EOS; user: CHAT, clip, text; SPEAK
    head = [BOS, CHAT, AUDIO_BOS]
    middle = [AUDIO_EOS, *b"hi", SPEAK, *b"yo", EOS, CHAT, AUDIO_BOS]
    tail = [AUDIO_EOS, *b"and?", SPEAK]
    assert ids == head + [AUDIO] * len(a) + middle + [AUDIO] * len(b) + tail
    expected = np.concatenate([thinker.embed_tokens(head), a, thinker.embed_tokens(middle), b,
                               thinker.embed_tokens(tail)])
    assert len(a) and len(b) and np.array_equal(rows, expected)
    assert result.error is None and result.samples.size
    assert result.loops["audio_encode"].outputs["clips"] == 2


def test_the_history_is_heard(chat):
    history = (PriorTurn("user", "hi", (whole(clip(1.3, 1)),)), PriorTurn("assistant", "yo"))
    alone = Engine(chat).submit(SpeakRequest("and?", mode="chat", max_tokens=6), collect=True).result()
    after = Engine(chat).submit(SpeakRequest("and?", mode="chat", max_tokens=6, history=history),
                                collect=True).result()
    assert alone.tokens["thinker_decode"] != after.tokens["thinker_decode"]


def test_a_clip_heard_before_is_not_encoded_again(chat):
    kept = whole(clip(2.4, 3))
    engine = Engine(chat)
    first = engine.submit(SpeakRequest("", mode="chat", max_tokens=4, audio=kept), collect=True).result()
    assert first.loops["audio_encode"].num_steps == 3
    history = (PriorTurn("user", "", (kept,)), PriorTurn("assistant", first.text))
    again = engine.submit(SpeakRequest("more", mode="chat", max_tokens=6, history=history), collect=True).result()
    fresh_history = (PriorTurn("user", "", (whole(clip(2.4, 3)),)), PriorTurn("assistant", first.text))
    fresh = Engine(chat).submit(SpeakRequest("more", mode="chat", max_tokens=6, history=fresh_history),
                                collect=True).result()
    heard = again.loops["audio_encode"]
    assert heard.num_steps == 0 and heard.outputs["clips_reused"] == 1 and heard.outputs["audio_positions"] > 0
    assert fresh.loops["audio_encode"].num_steps == 3 and fresh.loops["audio_encode"].outputs["clips_reused"] == 0
    assert again.tokens == fresh.tokens and np.array_equal(again.samples, fresh.samples) and again.samples.size


def test_stream_and_barrier_hear_a_conversation_alike(chat):
    history = (PriorTurn("user", "", (whole(clip(1.1, 4)),)), PriorTurn("assistant", "ok"),
               PriorTurn("user", "and this", (whole(clip(0.7, 5)), whole(clip(1.0, 6)))),
               PriorTurn("assistant", "fine"))
    results = [Engine(chat).submit(SpeakRequest("last", mode="chat", max_tokens=6, history=history,
                                                audio=streamed(clip(1.5, 7)), handoff=mode), collect=True).result()
               for mode in ("stream", "barrier")]
    assert results[0].tokens == results[1].tokens and results[0].samples.size
    assert np.array_equal(results[0].samples, results[1].samples)


def test_a_bad_history_is_refused(chat):
    with pytest.raises(SpecError, match="history"):
        SpeakRequest("x", history=(PriorTurn("robot", "x"),))
    with pytest.raises(SpecError, match="a conversation's history needs chat mode"):
        Engine(chat).submit(SpeakRequest("x", mode="echo", history=(PriorTurn("user", "x"),)))
    with pytest.raises(SpecError, match="does not listen"):
        Engine(load("qwen2_5_omni_toy")).submit(SpeakRequest("x", history=(PriorTurn("user", "x"),)))


@pytest.mark.parametrize("content, message", [
    (b'{"role": "user", "text": "hi"}\n{"role": "bot", "text": "x"}\n', ":2: role must be user or assistant"),
    (b'{"role": "user", "text": "hi"\n', ":1: not a JSON object"),
    (b'["user", "hi"]\n', ":1: not a JSON object of a turn"),
    (b'{"role": "user", "text": "hi", "mood": "ok"}\n', ":1: unknown key 'mood'"),
    (b'\n\n{"role": "user", "text": "\xff"}\n', ":3: not UTF-8 (byte 0xff"),
    (b'{"role": "user", "audio": "q.wav"}\n', ":1: audio must be a list of file paths"),
    (b'{"role": "user", "text": " "}\n', ":1: a user turn with no text, audio or images"),
])
def test_a_malformed_line_names_file_and_line(tmp_path, content, message):
    path = tmp_path / "h.jsonl"
    path.write_bytes(content)
    with pytest.raises(HistoryError) as caught:
        read_history(path)
    assert str(caught.value).startswith(f"{path}:") and message in str(caught.value)


def test_an_append_is_whole_lines_or_nothing(tmp_path, monkeypatch):
    path = tmp_path / "h.jsonl"
    path.write_bytes(b'{"role": "user", "text": "hi"}')  # written by hand: no newline at its end
    append_turns(path, [Turn("assistant", "yo", (str(tmp_path / "a.wav"),))])
    assert [json.loads(line) for line in path.read_text().splitlines()] == [
        {"role": "user", "text": "hi"}, {"role": "assistant", "text": "yo", "audio": ["a.wav"]}]
    before = path.read_bytes()
    real_write = os.write

    def half_then_full(fd, data):  # the disk fills halfway through the line
        if len(data) > 8:
            real_write(fd, bytes(data[:8]))
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", half_then_full)
    with pytest.raises(OSError):
        append_turns(path, [Turn("user", "a longer line than eight bytes")])
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert [t.text for t in read_history(path)] == ["hi", "yo"]


def test_an_earlier_turns_picture_is_seen_again(chat):
    from omni_cli.audio.seen import SeenImage
    from omni_cli.backends.base import IMAGE as IMAGE_UNIT
    from omni_cli.backends.base import ImageInput
    from omni_cli.backends.toy.thinker import IMAGE, VISION_BOS, VISION_EOS

    rng = np.random.default_rng(3)
    picture = SeenImage(rng.integers(0, 256, (40, 56, 3), dtype=np.uint8), "a picture")
    history = (PriorTurn("user", "see", (whole(clip(1.2, 8)),), (picture,)), PriorTurn("assistant", "ok"))
    rows, ids, result = prefilled_rows(chat, SpeakRequest("and?", mode="chat", max_tokens=4, history=history))
    thinker, encoder = chat.roles["thinker"], chat.roles["audio_encoder"]
    seen = chat.roles["image_encoder"].run(IMAGE_UNIT, [ImageInput(picture, 0)])[0].rows
    heard = encoder.encode_whole(clip(1.2, 8))
    head, middle = [BOS, CHAT, VISION_BOS], [VISION_EOS, AUDIO_BOS]
    tail = [AUDIO_EOS, *b"see", SPEAK, *b"ok", EOS, CHAT, *b"and?", SPEAK]
    assert ids == head + [IMAGE] * len(seen) + middle + [AUDIO] * len(heard) + tail
    expected = np.concatenate([thinker.embed_tokens(head), seen, thinker.embed_tokens(middle), heard,
                               thinker.embed_tokens(tail)])
    assert len(seen) and np.array_equal(rows, expected) and result.error is None
