"""Every placement runs the same requests to the same tokens and samples, releases every state, fails cleanly."""

from __future__ import annotations

import random
import signal
from contextlib import contextmanager

import numpy as np
import pytest

from omni_cli.api import load
from omni_cli.audio.seen import SeenImage
from omni_cli.audio.source import AudioSource
from omni_cli.bench.placement import placed
from omni_cli.engine import Engine, WorkUnitEvent
from omni_cli.engine.executors import WorkerDied, make_executors
from omni_cli.spec import SpeakRequest
from omni_cli.spec.stream import RequestStatus

KINDS = ["thread", "process", "ray"]  # beside inline (conftest.py starts each kind once per module)

MIX = [
    SpeakRequest("Hello, world", seed=1),
    SpeakRequest("A somewhat longer sentence, to make the lengths ragged.", seed=2, voice="tenor"),
    SpeakRequest("Ünïcödé and 日本語 text", seed=3),
    SpeakRequest("Answer me", mode="chat", seed=4, max_tokens=9),
    SpeakRequest("Hello, world", seed=5, handoff="barrier"),
]


def heard_and_seen():
    """Chat turns that hear a clip (the thinker prefills in parts: text, audio blocks, text), see a picture, or
    both, beside a text-only one; made afresh for each run (a clip keeps its encoding once heard)."""
    t = np.arange(32000) / 16000
    spoken = AudioSource.whole((0.3 * np.sin(2 * np.pi * 220 * t * (1 + 0.2 * t))).astype(np.float32), 16000)
    picture = SeenImage(np.random.default_rng(1).integers(0, 256, (40, 70, 3), dtype=np.uint8), "p1")
    return [
        SpeakRequest("", mode="chat", seed=1, max_tokens=9, audio=spoken),
        SpeakRequest("What is this?", mode="chat", seed=2, max_tokens=9, images=(picture,), voice="tenor"),
        SpeakRequest("Only text.", mode="chat", seed=3, max_tokens=9),
        SpeakRequest("And this?", mode="chat", seed=4, max_tokens=9, images=(picture,),
                     audio=AudioSource.whole(np.asarray(spoken.arrived()[::-1]), 16000), handoff="barrier"),
    ]


@contextmanager
def deadline(seconds: int):
    """Nothing may hang: past `seconds` the test fails instead of waiting forever."""
    def expired(*_):
        raise TimeoutError(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def run(program, executors, requests, trace=None, **options):
    engine = Engine(program, executors=executors, **options)
    if trace is not None:
        engine.subscribe(trace.append)
    handles = [engine.submit(r, collect=True) for r in requests]
    with deadline(120):
        for _ in engine.events():
            pass
    return engine, [h.result() for h in handles]


@pytest.fixture(scope="module")
def inline_results(toy):
    return run(toy, None, MIX)[1]


@pytest.mark.parametrize("kind", KINDS)
def test_every_placement_makes_inline_s_tokens_and_samples(toy, executors, inline_results, kind):
    engine, results = run(toy, executors(kind), MIX)
    for a, b in zip(inline_results, results, strict=True):
        assert b.status is RequestStatus.FINISHED, b.error
        assert a.tokens == b.tokens and a.text == b.text
        assert np.array_equal(a.samples, b.samples)
        assert all(len(t) > 0 for t in a.tokens.values()) and a.samples.size > 0  # empty is never parity
    assert engine.stats.batched_calls < engine.stats.work_units  # batches formed there too
    alone = run(toy, executors(kind), MIX[1:2])[1][0]  # a request alone on the executor, as inline alone
    assert alone.tokens == inline_results[1].tokens and np.array_equal(alone.samples, inline_results[1].samples)


@pytest.fixture(scope="module")
def chat():
    return load("qwen2_5_omni_toy", "chat")


@pytest.mark.parametrize("kind", [*KINDS, "thinker=process,talker=process"])
def test_turns_that_hear_and_see_placed_make_inline_s_tokens_and_samples(chat, executors, kind):
    """The thinker's prompt item joins its parts' rows: placed, those rows are handles in the driver, the
    talker's worker joins the arrays (engine/executors/handoff.py)."""
    inline = run(chat, None, heard_and_seen())[1]
    placed_executors = executors(kind, chat)
    engine, results = run(chat, placed_executors, heard_and_seen())
    for a, b in zip(inline, results, strict=True):
        assert b.status is RequestStatus.FINISHED, b.error
        assert a.tokens == b.tokens and a.text == b.text and np.array_equal(a.samples, b.samples)
        assert all(len(t) > 0 for t in a.tokens.values()) and a.samples.size > 0  # empty is never parity
    del engine, results
    assert {name: ex.live_states() for name, ex in placed_executors.items()} == dict.fromkeys(chat.components, 0)


@pytest.mark.parametrize("kind", KINDS)
def test_stages_overlap_in_the_trace(toy, executors, kind):
    trace: list = []
    run(toy, executors(kind), MIX[:3], trace)
    units = sorted((e for e in trace if isinstance(e, WorkUnitEvent)), key=lambda e: e.start_s)
    overlapping = {(a.loop, b.loop) for i, a in enumerate(units) for b in units[i + 1:i + 40]
                   if a.loop != b.loop and b.start_s < a.start_s + a.dur_s}
    assert overlapping, "no two WorkUnits of different components ran at the same time"
    by_loop: dict[str, list] = {}
    for e in units:  # one call per component in flight: a component's own calls never overlap
        by_loop.setdefault(e.loop, []).append((e.start_s, e.start_s + e.dur_s))
    for spans in by_loop.values():
        calls = sorted(set(spans))
        assert all(end <= nxt for (_, end), (nxt, _) in zip(calls, calls[1:], strict=False)), calls


@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
def test_random_cancellations_leave_no_state_anywhere(toy, executors, kind):
    """200 requests, a third cancelled at a random step: every component ends holding no request state.

    Which requests are cancelled, and how many submissions after their own, is drawn up front, so the draw
    does not depend on how far the executor got (a thread's timing would change which requests are live).
    """
    rng = random.Random(13)
    placed_executors = executors(kind)
    engine = Engine(toy, executors=placed_executors, max_batch=8)
    texts = ["Hi.", "Hello there", "One two three", "Good night, moon"]
    cancel_at: dict[int, list[int]] = {}  # submission index -> the requests cancelled right after it
    for victim in rng.sample(range(200), 66):
        cancel_at.setdefault(victim + rng.randint(0, 3), []).append(victim)
    handles, live_mid_run, cancelled_live = [], 0, []
    with deadline(300):
        for i in range(200):
            handles.append(engine.submit(SpeakRequest(rng.choice(texts), seed=i, handoff=rng.choice(["stream", "barrier"]))))
            for victim in cancel_at.get(i, []):
                if not handles[victim].status.is_done:
                    cancelled_live.append(handles[victim])
                handles[victim].cancel()
            while engine.num_active >= 8:
                engine.step()
            if i % 10 == 9:  # now and then: at one instant every running request may still be in its thinker
                live_mid_run = max(live_mid_run, placed_executors["talker"].live_states())
        while not engine.is_idle:
            engine.step()
    statuses = [h.status for h in handles]
    assert len(cancelled_live) > 20 and statuses.count(RequestStatus.FINISHED) > 20
    assert all(h.status is RequestStatus.CANCELLED for h in cancelled_live)  # live when cancelled: cancelled
    assert set(statuses) == {RequestStatus.CANCELLED, RequestStatus.FINISHED}
    assert engine.budget.reserved == 0
    assert live_mid_run > 0  # the worker really held the running requests' states
    assert {name: ex.live_states() for name, ex in placed_executors.items()} == dict.fromkeys(toy.components, 0)


@pytest.mark.parametrize(("kind", "victim"), [("process", "talker"), ("ray", "talker"), ("process", "thinker")])
def test_a_worker_killed_mid_request_fails_its_requests_and_nothing_hangs(toy, kind, victim, request):
    """The thinker's case: its states go down a pipe to the talker's worker, which must not wait for more."""
    if kind == "ray":
        request.getfixturevalue("ray_cluster")
    executors = make_executors(toy, placed(toy, kind))
    engine = Engine(toy, executors=executors)
    handles = [engine.submit(r) for r in MIX[:3]]
    try:
        with deadline(120):
            while engine.stats.work_units < 30:  # every request is past its prefills
                engine.step()
            executors[victim].kill()
            for _ in engine.events():
                pass
        assert all(h.status.is_done for h in handles)
        failed = [h for h in handles if h.status is RequestStatus.FAILED]
        assert failed, [h.status for h in handles]
        died = f"{victim}: its {'worker process' if kind == 'process' else 'Ray actor'} died"
        # a talker step that needs states the dead thinker never sent says so
        lost = "the thinker's hidden states for this step never reached the talker (its worker is gone)"
        errors = [h.result().error for h in failed]  # ended: result() drives nothing more
        assert all(died in e or (victim == "thinker" and lost in e) for e in errors), errors
        assert engine.budget.reserved == 0
        with pytest.raises(WorkerDied, match=died):  # a later call fails at once, never waits
            executors[victim].submit("ar_token", []).result(timeout=5)
    finally:
        engine.close()
