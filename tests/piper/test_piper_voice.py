"""The Piper voice through our engine: equal to the voice's own single pass, serial = interleaved = batched,
and words a recogniser can find."""

from __future__ import annotations

import numpy as np
import pytest
from runtime_helpers import run_alone, run_together

from omni_cli.spec import SpeakRequest


def snr_db(reference: np.ndarray, ours: np.ndarray) -> float:
    assert reference.shape == ours.shape
    error = float(np.sum((reference.astype(np.float64) - ours) ** 2))
    return float("inf") if error == 0 else 10 * np.log10(float(np.sum(reference.astype(np.float64) ** 2)) / error)


def sentence_ids(program, text: str) -> list[list[int]]:
    phonemizer = program.roles["phonemizer"]
    return [phonemizer.phoneme_ids(s) for s in phonemizer.split(text).sentences]


def test_staged_chunked_waveform_equals_the_single_pass(quiet_voice, single_pass):
    # two sentences: the second long enough for chunks of 16, 32, 64 and 128 frames
    text = "Hello there. The museum opens at nine in the morning, and closes at six in the evening on weekdays."
    ours = run_alone(quiet_voice, SpeakRequest(text, seed=3))
    assert ours.status.value == "finished" and ours.sample_rate == 22050
    first, second = (single_pass(ids) for ids in sentence_ids(quiet_voice, text))
    pause = np.zeros(quiet_voice.roles["vocoder"].pause_samples, dtype=np.float32)
    expected = np.concatenate([first, pause, second])
    assert len(second) > 240 * 256  # more frames than the first four chunks together
    assert ours.samples.shape == expected.shape
    assert snr_db(expected, ours.samples) >= 40.0


def test_speed_is_the_length_scale(quiet_voice, single_pass):
    text = "Speak a little faster."
    (ids,) = sentence_ids(quiet_voice, text)
    ours = run_alone(quiet_voice, SpeakRequest(text, speed=1.5))
    expected = single_pass(ids, length_scale=1 / 1.5)
    assert ours.samples.shape == expected.shape and len(expected) < 0.8 * len(single_pass(ids))
    assert snr_db(expected, ours.samples) >= 40.0


MIX = [
    SpeakRequest("Good morning. How are you?", seed=1),
    SpeakRequest("It costs 12 dollars.", seed=2, speed=1.25),
    SpeakRequest("Good morning. How are you?", seed=3),
]


@pytest.fixture(scope="module")
def solo(voice):
    return [run_alone(voice, r) for r in MIX]


def test_serial_equals_interleaved_and_batched_within_tolerance(voice, solo):
    assert all(r.samples.size > 22050 for r in solo)
    assert not np.array_equal(solo[0].samples[:4096], solo[2].samples[:4096])  # the seed draws the noise
    engine, together = run_together(voice, MIX, max_batch=1)
    for a, b in zip(solo, together, strict=True):
        assert a.text == b.text and np.array_equal(a.samples, b.samples)
    engine, batched = run_together(voice, MIX, max_batch=8)
    assert engine.stats.batched_calls < engine.stats.work_units  # some decoder chunks ran as one call
    tolerance = voice.card.batching.sample_tolerance
    for a, b in zip(solo, batched, strict=True):
        assert a.samples.shape == b.samples.shape
        assert float(np.max(np.abs(a.samples - b.samples))) <= tolerance


def test_barrier_equals_stream(voice, solo):
    barrier = run_alone(voice, SpeakRequest(MIX[0].text, seed=1, handoff="barrier"))
    assert np.array_equal(barrier.samples, solo[0].samples)


def test_sentences_stream_and_unreadable_characters_are_dropped_with_a_warning(voice):
    from omni_cli.engine import Engine
    from omni_cli.spec.stream import AudioChunk, Notice, TextPiece

    engine = Engine(voice)
    handle = engine.submit(SpeakRequest("Dr. Smith paid $4.50 ☃ 你好. Is that right? Yes.", seed=1))
    events = list(handle.stream())
    notices = [e.message for e in events if isinstance(e, Notice)]
    assert notices == ["dropped characters the phonemizer cannot read: ☃你好"]
    text = "".join(e.text for e in events if isinstance(e, TextPiece))
    assert text == "Doctor Smith paid four dollars fifty cents. Is that right? Yes."
    # the first audio comes before the last sentence is phonemised: sentences stream
    kinds = [type(e).__name__ for e in events]
    assert kinds.index("AudioChunk") < [i for i, k in enumerate(kinds) if k == "TextPiece"][-1]
    assert all(e.sample_rate == 22050 for e in events if isinstance(e, AudioChunk))


def test_text_with_nothing_readable_is_refused_before_it_runs(voice):
    from omni_cli.engine import Engine
    from omni_cli.spec import SpecError

    with pytest.raises(SpecError, match="no word the voice can read") as refused:  # bad input: exit 2, HTTP 400
        Engine(voice).submit(SpeakRequest("你好 ☃", seed=1))
    assert "你好" in str(refused.value) and "\n" not in str(refused.value)


def test_the_recogniser_finds_the_words_of_a_clear_sentence(voice):
    from asr import Recogniser, words

    result = run_alone(voice, SpeakRequest("The quick brown fox jumps over the lazy dog.", seed=1))
    heard = words(Recogniser().transcribe(result.samples, result.sample_rate))
    assert {"quick", "brown", "fox", "lazy", "dog"} <= set(heard), heard


def test_the_first_chunk_is_not_queued_behind_later_sentences(voice):
    from omni_cli.engine import Engine

    engine = Engine(voice)
    units = []
    engine.subscribe(lambda e: units.append((e.loop, e.kind, e.step)) if e.event == "work_unit" else None)
    engine.submit(SpeakRequest("One sentence here. And a second one. And a third.", seed=1)).result()
    order = {unit: i for i, unit in enumerate(units)}
    assert order[("decoder", "frame_chunk", 0)] < order[("frames", "sentence", 1)]  # first audio first
    assert order[("frames", "sentence", 0)] < order[("phonemize", "sentence", 2)]  # phonemes one sentence ahead
