"""The embedded numpy experts: genuine nets whose outputs depend on their weights and all their inputs."""

import dataclasses

import numpy as np
import pytest
from runtime_helpers import run_alone

from omni_cli.backends.base import AUDIO_CHUNK, VocoderChunkInput
from omni_cli.backends.toy.nn import linear
from omni_cli.spec import SpeakRequest

SR = 24000


def test_linear_rows_do_not_depend_on_batch_mates():
    rng = np.random.default_rng(0)
    w = rng.standard_normal((64, 96)).astype(np.float32)
    x = rng.standard_normal((9, 64)).astype(np.float32)
    whole = linear(x, w)
    for i in range(9):
        assert np.array_equal(linear(x[i:i + 1], w)[0], whole[i])
    # and it is the real product, not an approximation of something else
    np.testing.assert_allclose(whole, x @ w, rtol=1e-5, atol=1e-5)


def test_speech_is_audible_unclipped_and_sized_by_codes(toy):
    result = run_alone(toy, SpeakRequest("Hello, world", seed=3))
    talker, vocoder = toy.roles["talker"], toy.roles["vocoder"]
    codes = [t for t in result.tokens["talker_decode"] if talker.code_of(t) is not None]
    assert result.samples.shape[0] == vocoder.samples_per_code * len(codes) > 0
    rms = float(np.sqrt(np.mean(result.samples ** 2)))
    assert 0.02 < rms < 0.5
    assert float(np.max(np.abs(result.samples))) < 0.9
    assert result.text == "Hello, world"


def test_same_seed_same_audio_other_seed_other_audio(toy):
    a = run_alone(toy, SpeakRequest("Good morning", seed=5))
    b = run_alone(toy, SpeakRequest("Good morning", seed=5))
    c = run_alone(toy, SpeakRequest("Good morning", seed=6))
    assert np.array_equal(a.samples, b.samples) and a.samples.size
    assert not np.array_equal(a.samples[: c.samples.size], c.samples[: a.samples.size])


def test_talker_length_follows_the_text(toy):
    short = run_alone(toy, SpeakRequest("Hi", seed=1))
    long = run_alone(toy, SpeakRequest("Hi there, this sentence is quite a bit longer.", seed=1))
    assert long.samples.size > 4 * short.samples.size


def _vocode(vocoder, codes, chunk):
    state = vocoder.new_state("alto")
    out, start = [], 0
    while start < len(codes):
        end = len(codes) if chunk == 0 else min(start + chunk, len(codes))
        (o,) = vocoder.run(AUDIO_CHUNK, [VocoderChunkInput(state, codes, start, end, True)])
        out.append(o.samples)
        start = end
    return np.concatenate(out)


@pytest.mark.parametrize("chunk", [1, 3, 7, 10, 25])
def test_chunked_vocoder_equals_whole_utterance(toy, chunk):
    vocoder = toy.roles["vocoder"]
    codes = list(np.random.default_rng(1).integers(0, 64, 53))
    whole = _vocode(vocoder, codes, 0)
    assert whole.size == 53 * vocoder.samples_per_code
    assert np.array_equal(_vocode(vocoder, codes, chunk), whole)


def test_vocoder_output_depends_on_every_code_and_has_no_clicks(toy):
    vocoder = toy.roles["vocoder"]
    codes = list(np.random.default_rng(2).integers(0, 64, 40))
    base = _vocode(vocoder, codes, 10)
    changed = list(codes)
    changed[20] = (changed[20] + 1) % 64
    other = _vocode(vocoder, changed, 10)
    diff = np.flatnonzero(base != other)
    assert diff.size and diff[0] >= (20 - vocoder.lookahead_codes - 1) * 480  # causal up to its look-ahead
    # no discontinuity at chunk boundaries: the jump there is like the jumps elsewhere
    steps = np.abs(np.diff(base))
    boundaries = [k * 10 * 480 - 1 for k in range(1, 4)]
    assert max(steps[b] for b in boundaries) <= 1.5 * np.quantile(steps, 0.999)


def test_full_payload_hidden_states_reach_the_talker(toy, monkeypatch):
    """Same thinker tokens (echo), perturbed thinker hidden states: the talker's codes and audio change."""
    request = SpeakRequest("Payload test", seed=9)
    base = run_alone(toy, request)
    thinker = toy.roles["thinker"]
    original = type(thinker).run

    def nudged(self, kind, inputs):
        outs = original(self, kind, inputs)
        return [dataclasses.replace(o, hidden=o.hidden + np.float32(0.05)) for o in outs]

    monkeypatch.setattr(type(thinker), "run", nudged)
    other = run_alone(toy, request)
    assert other.tokens["thinker_decode"] == base.tokens["thinker_decode"]
    assert other.tokens["talker_decode"] != base.tokens["talker_decode"]
    assert not np.array_equal(other.samples[: base.samples.size], base.samples[: other.samples.size])


def test_voices_change_the_audio(toy):
    alto = run_alone(toy, SpeakRequest("Voices", seed=2, voice="alto"))
    tenor = run_alone(toy, SpeakRequest("Voices", seed=2, voice="tenor"))
    n = min(alto.samples.size, tenor.samples.size)
    assert n and not np.array_equal(alto.samples[:n], tenor.samples[:n])


def test_chat_mode_generates_its_own_reply(toy):
    result = run_alone(toy, SpeakRequest("Tell me something", mode="chat", seed=4, max_tokens=12))
    reply = result.tokens["thinker_decode"]
    assert 1 <= len(reply) <= 12
    assert result.samples.size > 0
