"""Correctness gates: serial ≡ interleaved, batched ≡ unbatched, barrier ≡ stream — bit for bit."""

import numpy as np
import pytest
from runtime_helpers import run_alone, run_together

from omni_cli.spec import SpeakRequest

MIX = [
    SpeakRequest("Hello, world", seed=1),
    SpeakRequest("A somewhat longer sentence, to make the lengths ragged.", seed=2, voice="tenor"),
    SpeakRequest("Ünïcödé and 日本語 text", seed=3),
    SpeakRequest("Answer me", mode="chat", seed=4, max_tokens=9),
    SpeakRequest("Hello, world", seed=5),
]


def assert_same(a, b):
    assert a.status == b.status
    assert a.tokens == b.tokens
    assert a.text == b.text
    assert np.array_equal(a.samples, b.samples)
    # an empty output never counts as parity
    assert all(len(t) > 0 for t in a.tokens.values()) and a.samples.size > 0


@pytest.fixture(scope="module")
def solo(toy):
    return [run_alone(toy, r) for r in MIX]


@pytest.mark.parametrize("policy", ["latency-first", "round-robin"])
def test_serial_equals_interleaved(toy, solo, policy):
    engine, together = run_together(toy, MIX, policy=policy, max_batch=1)
    for a, b in zip(solo, together, strict=True):
        assert_same(a, b)
    assert engine.stats.batched_calls == engine.stats.work_units  # max_batch=1: no batching


def test_batched_equals_unbatched(toy, solo):
    engine, together = run_together(toy, MIX, max_batch=16)
    assert engine.stats.batched_calls < engine.stats.work_units  # batches really formed
    tolerance = toy.card.batching.sample_tolerance
    for a, b in zip(solo, together, strict=True):
        assert a.tokens == b.tokens
        assert a.samples.shape == b.samples.shape and a.samples.size
        assert float(np.max(np.abs(a.samples - b.samples))) <= tolerance


def test_batches_mix_ragged_context_lengths(toy):
    seen = []
    from omni_cli.engine import Engine

    engine = Engine(toy, max_batch=16)
    engine.subscribe(lambda e: seen.append(e) if getattr(e, "kind", None) == "ar_token" else None)
    for r in MIX:
        engine.submit(r)
    for _ in engine.events():
        pass
    assert max(e.batch_size for e in seen) >= 3


@pytest.mark.parametrize("request_", MIX[:4], ids=["hello", "long", "unicode", "chat"])
def test_barrier_equals_stream(toy, request_):
    from dataclasses import replace

    stream = run_alone(toy, replace(request_, handoff="stream"))
    barrier = run_alone(toy, replace(request_, handoff="barrier"))
    assert_same(stream, barrier)


def test_stream_handoff_starts_audio_before_the_talker_finishes(toy):
    from dataclasses import replace

    from omni_cli.engine import Engine

    def first_audio_unit(handoff):
        engine = Engine(toy)
        log = []
        engine.subscribe(log.append)
        engine.submit(replace(MIX[1], handoff=handoff))
        for _ in engine.events():
            pass
        units = [e for e in log if e.event == "work_unit"]
        first_chunk = next(i for i, e in enumerate(units) if e.kind == "audio_chunk")
        last_talker = max(i for i, e in enumerate(units) if e.loop == "talker_decode")
        return first_chunk, last_talker

    chunk, talker_end = first_audio_unit("stream")
    assert chunk < talker_end / 4
    chunk, talker_end = first_audio_unit("barrier")
    assert chunk > talker_end
