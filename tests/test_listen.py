"""The toy card listens: audio encoded block by block as it arrives equals the whole clip, the thinker's prefill in
parts matches one prefill, and chat turns with audio run serial ≡ interleaved, batched with text-only turns."""

import threading
import time
from dataclasses import replace

import numpy as np
import pytest
from runtime_helpers import run_alone, run_together

from omni_cli.api import load
from omni_cli.audio.source import AudioSource
from omni_cli.backends.base import AR_PREFILL, AUDIO_BLOCK, ARStepInput
from omni_cli.loops import Channel, LoopRequest, WorkPlan
from omni_cli.spec import SpeakRequest, SpecError

RATE = 16000


@pytest.fixture(scope="module")
def chat():
    return load("qwen2_5_omni_toy", "chat")


def clip(seconds: float, seed: int) -> np.ndarray:
    """A voiced-ish test signal: a gliding tone with noise, different per seed."""
    t = np.arange(int(seconds * RATE)) / RATE
    rng = np.random.default_rng(seed)
    tone = np.sin(2 * np.pi * (180 + 40 * seed) * t * (1 + 0.2 * t)) * 0.3
    return (tone + rng.standard_normal(t.size) * 0.05).astype(np.float32)


def streamed(samples: np.ndarray, rate: int = RATE, piece_s: float = 0.037, pause_s: float = 0.001) -> AudioSource:
    """A source fed by a thread in pieces that never line up with the encoder's blocks or frames."""
    source = AudioSource(rate)
    step = max(1, int(piece_s * rate))

    def feed():
        for i in range(0, len(samples), step):
            source.push(samples[i:i + step])
            time.sleep(pause_s)
        source.end()

    threading.Thread(target=feed, daemon=True).start()
    return source


def encode_by_blocks(program, source):
    """Drive the audio_encode loop by hand: each block's rows, in order, as the loop publishes them."""
    loop = program.loops["audio_encode"]
    out = Channel("heard")
    state = loop.init(source, out, LoopRequest("r", 0))
    while (plan := loop.next(state)).__class__ is WorkPlan:
        assert plan.kind == AUDIO_BLOCK
        loop.advance(state, plan, loop.component.run(AUDIO_BLOCK, [plan.inputs])[0])
    assert out.is_closed
    return [b.rows for b in out.items], loop.finalize(state)


@pytest.mark.parametrize("seconds", [0.3, 1.0, 2.5, 3.0111])
def test_blocks_as_they_arrive_equal_the_whole_clip(chat, seconds):
    samples = clip(seconds, 1)
    blocks, result = encode_by_blocks(chat, streamed(samples))
    encoder = chat.roles["audio_encoder"]
    whole = encoder.encode_whole(samples)
    got = np.concatenate(blocks)
    assert got.shape == (encoder.tokens_for(len(samples)), chat.roles["thinker"].d_model) and got.size
    assert np.array_equal(got, whole)  # bit for bit: every row is computed alone, attention stays in its block
    # the last block is the one the audio ends inside: at a block's edge, an empty one when the end comes later
    assert result.num_steps in (int(np.ceil(seconds)), len(samples) // encoder.block_samples + 1)
    assert result.outputs["audio_s"] == len(samples) / RATE


def test_a_block_waits_for_its_audio(chat):
    """A block's WorkUnit is planned at once; its read returns when the block's last sample has arrived."""
    source = AudioSource(RATE)
    loop = chat.loops["audio_encode"]
    state = loop.init(source, Channel("heard"), LoopRequest("r", 0))
    plan = loop.next(state)
    done = []
    worker = threading.Thread(target=lambda: done.append(loop.component.run(AUDIO_BLOCK, [plan.inputs])[0]))
    worker.start()
    source.push(np.zeros(RATE - 1, np.float32))
    worker.join(0.2)
    assert not done  # one sample short of the block
    source.push(np.zeros(5, np.float32))
    worker.join(5)
    assert done and done[0].num_samples == RATE and len(done[0].rows) == 25


def test_prefill_in_parts_matches_one_prefill(chat):
    thinker, encoder = chat.roles["thinker"], chat.roles["audio_encoder"]
    rows = encoder.encode_whole(clip(2.2, 3))
    prompt = thinker.listen_prompt("what is this?", True)
    audio_ids = [prompt.audio_id] * len(rows)
    one = np.concatenate([thinker.embed_tokens(prompt.before_ids), rows, thinker.embed_tokens(prompt.after_ids)])
    whole = thinker.run(AR_PREFILL, [ARStepInput(thinker.new_cache(), prompt.before_ids + audio_ids + prompt.after_ids,
                                                 prefill=one)])[0]
    cache = thinker.new_cache()
    for ids, payload in [(prompt.before_ids, None), (audio_ids[:25], rows[:25]), (audio_ids[25:], rows[25:]),
                         (prompt.after_ids, None)]:
        part = thinker.run(AR_PREFILL, [ARStepInput(cache, ids, prefill=payload)])[0]
    assert cache.length == len(one)
    np.testing.assert_allclose(part.logits, whole.logits, rtol=1e-5, atol=1e-5)
    assert int(np.argmax(part.logits)) == int(np.argmax(whole.logits))


def turns(make_source):
    return [
        SpeakRequest("What did I say?", mode="chat", seed=1, max_tokens=12, audio=make_source(clip(1.7, 1))),
        SpeakRequest("Only text here.", mode="chat", seed=2, max_tokens=9),
        SpeakRequest("", mode="chat", seed=3, max_tokens=10, voice="tenor", audio=make_source(clip(3.2, 2))),
        SpeakRequest("And this?", mode="chat", seed=4, max_tokens=7, audio=make_source(clip(0.4, 3))),
    ]


def assert_same(a, b):
    assert a.status == b.status and a.error is None
    assert a.tokens == b.tokens and a.text == b.text
    assert np.array_equal(a.samples, b.samples)
    assert all(len(t) > 0 for t in a.tokens.values()) and a.samples.size > 0


@pytest.fixture(scope="module")
def solo(chat):
    return [run_alone(chat, r) for r in turns(lambda s: AudioSource.whole(s, RATE))]


@pytest.mark.parametrize("max_batch", [1, 16])
def test_serial_equals_interleaved_and_batched_with_text_turns(chat, solo, max_batch):
    engine, together = run_together(chat, turns(streamed), max_batch=max_batch)
    for a, b in zip(solo, together, strict=True):
        assert_same(a, b)
    if max_batch > 1:
        assert engine.stats.batched_calls < engine.stats.work_units  # batches really formed


def test_heard_audio_changes_the_answer(chat, solo):
    other = run_alone(chat, replace(turns(lambda s: AudioSource.whole(s, RATE))[0], audio=AudioSource.whole(clip(1.7, 9), RATE)))
    assert other.tokens["thinker_decode"] != solo[0].tokens["thinker_decode"]  # the thinker heard the audio


def test_barrier_equals_stream(chat, solo):
    barrier = run_alone(chat, replace(turns(streamed)[2], handoff="barrier"))
    assert_same(solo[2], barrier)


def test_resampled_input_is_heard(chat):
    """44.1 kHz in, resampled to the encoder's 16 kHz as it arrives: the same positions as the clip's length says."""
    at_44k = clip(2.0, 4)
    r = run_alone(chat, SpeakRequest("hi", mode="chat", max_tokens=3, audio=streamed(np.repeat(at_44k, 1), 44100)))
    assert r.error is None and r.loops["audio_encode"].outputs["audio_positions"] > 0
    assert abs(r.loops["audio_encode"].outputs["audio_s"] - len(at_44k) / 44100) < 0.01


def test_too_long_audio_fails_the_request(chat):
    long = load("qwen2_5_omni_toy", "chat", overrides={"components.audio_encoder.params.max_seconds": 1.0})
    r = run_alone(long, SpeakRequest("hi", mode="chat", audio=AudioSource.whole(clip(1.5, 1), RATE)))
    assert r.error is not None and "longer than the encoder's 1 s" in r.error


def test_speak_and_piper_do_not_listen():
    audio = AudioSource.whole(clip(0.5, 1), RATE)
    speak = load("qwen2_5_omni_toy")
    with pytest.raises(SpecError, match="program 'speak' does not listen"):
        speak.wire("r1", SpeakRequest("hi", audio=audio), lambda e: None)
    with pytest.raises(SpecError, match="lacks capability .*listen"):
        load("piper_joe", "chat")


def test_the_chat_program_speaks_echo_requests_as_speak_does(chat):
    """A server on the chat program also answers /v1/audio/speech: an echo request is the text, forced."""
    speak = run_alone(load("qwen2_5_omni_toy"), SpeakRequest("Hello there", mode="echo"))
    echo = run_alone(chat, SpeakRequest("Hello there", mode="echo"))
    assert echo.tokens["thinker_decode"] == speak.tokens["thinker_decode"] and echo.samples.size
    with pytest.raises(SpecError, match="heard audio and seen images need chat mode"):
        chat.wire("r1", SpeakRequest("hi", mode="echo", audio=AudioSource.whole(clip(0.5, 1), RATE)), lambda e: None)


def test_a_whole_clip_travels_to_a_worker_process_and_audio_still_arriving_says_why_not():
    import pickle

    samples = np.sin(np.arange(24_000 * 3) / 7).astype(np.float32)
    whole = AudioSource(24_000)
    for part in np.array_split(samples, 5):  # chunks resampled one by one, in the worker as here
        whole.push(part)
    whole.end()
    copy = pickle.loads(pickle.dumps(whole))
    assert np.array_equal(copy.read(16_000, 0, 48_000), whole.read(16_000, 0, 48_000))
    assert copy.known(16_000) == whole.known(16_000)

    arriving = AudioSource(16_000)
    arriving.push(samples[:1000])
    with pytest.raises(ValueError, match="audio still arriving .* place the audio encoder in a thread"):
        pickle.dumps(arriving)
