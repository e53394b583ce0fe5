"""Placement on the hf tiny checkpoint: the thinker and talker in processes or on Ray, their hand-off going
worker to worker (engine/executors/handoff.py), make inline's tokens and samples: bit for bit for a
request alone, identical tokens and samples within the card's tolerance for requests batched together."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from omni_cli.api import load  # noqa: E402
from omni_cli.bench import greedy_variant  # noqa: E402
from omni_cli.bench.placement import placed  # noqa: E402
from omni_cli.engine import Engine  # noqa: E402
from omni_cli.engine.executors import close_executors, make_executors  # noqa: E402
from omni_cli.spec.request import SpeakRequest  # noqa: E402

REQUESTS = [SpeakRequest(f"hello {i}", mode="chat", voice="Chelsie", seed=i, request_id=f"p{i}") for i in range(3)]


@pytest.fixture(scope="module")
def program(tiny_checkpoint):
    # chunk sizes that do not hang on how fast the machine is at the moment: placed and inline chunk alike
    return greedy_variant(load("qwen2_5_omni", settings={"model_path": str(tiny_checkpoint)},
                               overrides={"loops.vocoder.pace": "schedule"}), {"thinker": 8, "talker": 40})


@pytest.fixture(scope="module")
def inline(program):
    """A request alone, and the three together, with every component in this thread."""
    return run(program, REQUESTS[:1])[0], run(program, REQUESTS)


def run(program, requests, executors=None):
    engine = Engine(program, executors=executors)
    handles = [engine.submit(r, collect=True) for r in requests]
    for _ in engine.events():
        pass
    results = [h.result() for h in handles]
    assert all(r.error is None for r in results), [r.error for r in results]
    return results


@pytest.mark.parametrize("kind", ["process", "ray"])
def test_thinker_and_talker_placed_make_inline_s_tokens_and_samples(program, inline, kind, request):
    if kind == "ray":
        request.getfixturevalue("ray_cluster")
    inline_alone, inline_together = inline
    # the vocoder stays in this process: the hand-off pair is what this checks
    executors = make_executors(program, placed(program, f"thinker={kind},talker={kind}"))
    try:
        assert executors["talker"].view(program.components["talker"]) is not program.components["talker"]
        alone = run(program, REQUESTS[:1], executors)[0]
        together = run(program, REQUESTS, executors)
        assert executors["talker"].live_states() == 0  # every pair sent to the talker's worker was dropped
    finally:
        close_executors(executors)
    assert alone.tokens == inline_alone.tokens and all(len(t) > 0 for t in alone.tokens.values())
    assert alone.samples.size > 0 and np.array_equal(alone.samples, inline_alone.samples)
    tolerance = program.card.batching.sample_tolerance
    for a, b in zip(inline_together, together, strict=True):
        assert a.tokens == b.tokens and a.samples.size == b.samples.size > 0
        assert float(np.max(np.abs(a.samples - b.samples))) <= tolerance


def test_a_heard_and_seen_turn_with_thinker_and_talker_in_processes_is_inline_s(tiny_checkpoint):
    """The thinker prefills text, audio and a picture in parts: placed, the talker's worker joins the parts'
    rows as the thinker does (torch.cat here), bit for bit as inline."""
    from omni_cli.audio.seen import SeenImage
    from omni_cli.audio.source import AudioSource

    chat = greedy_variant(load("qwen2_5_omni", "chat", settings={"model_path": str(tiny_checkpoint)}),
                          {"thinker": 6, "talker": 24})
    t = np.arange(32000) / 16000

    def turn():  # afresh for each run: a clip keeps its encoding once heard
        spoken = AudioSource.whole((0.3 * np.sin(2 * np.pi * 220 * t)).astype(np.float32), 16000)
        picture = SeenImage(np.random.default_rng(1).integers(0, 256, (40, 70, 3), dtype=np.uint8), "p1")
        return [SpeakRequest("what is it?", mode="chat", voice="Chelsie", seed=1, audio=spoken, images=(picture,))]

    inline = run(chat, turn())[0]
    executors = make_executors(chat, placed(chat, "thinker=process,talker=process"))
    try:
        ours = run(chat, turn(), executors)[0]
        assert executors["talker"].live_states() == 0
    finally:
        close_executors(executors)
    assert ours.tokens == inline.tokens and all(len(t) > 0 for t in ours.tokens.values())
    assert ours.samples.size > 0 and np.array_equal(ours.samples, inline.samples)
