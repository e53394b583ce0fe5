"""Load: 200 requests through one engine with random cancellations and an injected fault."""

import gc
import hashlib
import random
import tracemalloc

import numpy as np
from runtime_helpers import run_alone

from omni_cli.bench import make_text
from omni_cli.engine import Engine
from omni_cli.spec import SpeakRequest
from omni_cli.spec.stream import AudioChunk, RequestDone, RequestStatus

VARIANTS = [(make_text(n, i), i) for i, n in enumerate([4, 9, 15, 22, 30, 41, 55, 70])]


def digest(samples: np.ndarray, tokens) -> str:
    return hashlib.sha256(samples.tobytes() + repr(tokens).encode()).hexdigest()


def run_load(program, num_requests=200, cancel_fraction=0.2, seed=0):
    rng = random.Random(seed)
    engine = Engine(program, max_batch=16)
    handles, wirings = {}, []
    for i in range(num_requests):
        text, s = VARIANTS[i % len(VARIANTS)]
        handles[f"L{i}"] = (engine.submit(SpeakRequest(text, seed=s, request_id=f"L{i}"), collect=True), i % len(VARIANTS))
        wirings.append(engine.inspect(f"L{i}"))
    doomed = set(rng.sample(sorted(handles), int(cancel_fraction * num_requests)))
    done = {}
    ticks = 0
    while not engine.is_idle:
        engine.step()
        ticks += 1
        for rid in [r for r in doomed if rng.random() < 0.02]:
            engine.cancel(rid)
            doomed.discard(rid)
        for event in engine.poll():
            if isinstance(event, RequestDone):
                done[event.request_id] = event
    return engine, handles, done, wirings


def test_two_hundred_requests_complete_identically_or_are_cancelled(toy):
    solo = []
    for text, s in VARIANTS:
        r = run_alone(toy, SpeakRequest(text, seed=s))
        solo.append(digest(r.samples, r.tokens))
    engine, handles, done, wirings = run_load(toy)
    assert len(done) == 200
    cancelled = 0
    for rid, (handle, variant) in handles.items():
        status = done[rid].status
        assert status in (RequestStatus.FINISHED, RequestStatus.CANCELLED), (rid, done[rid].error)
        if status is RequestStatus.CANCELLED:
            cancelled += 1
            continue
        result = handle.result()
        assert result.samples.size > 0
        assert digest(result.samples, result.tokens) == solo[variant], rid
    assert 10 <= cancelled <= 40
    assert engine.budget.reserved == 0 and engine.is_idle
    for wired in wirings:  # no stream stays open
        assert all(ch.is_closed for ch in wired.slots.values() if hasattr(ch, "is_closed"))


def test_memory_does_not_grow_run_over_run(toy):
    def one_run():
        engine, handles, _, wirings = run_load(toy, num_requests=24, seed=1)
        del engine, handles, wirings
        gc.collect()
        return tracemalloc.get_traced_memory()[0]

    tracemalloc.start()
    try:
        one_run()  # warm-up: caches of the first run (numpy, dataclasses) are not growth
        after = [one_run() for _ in range(3)]
    finally:
        tracemalloc.stop()
    assert max(after) - min(after) < 256 * 1024, after


def test_a_fault_in_one_requests_step_fails_it_alone(toy, monkeypatch):
    texts = [("First of three", 1), ("Second, the one that breaks", 2), ("Third of three", 3)]
    solo = [run_alone(toy, SpeakRequest(t, seed=s)) for t, s in texts]
    engine = Engine(toy, max_batch=16)
    handles = [engine.submit(SpeakRequest(t, seed=s), collect=True) for t, s in texts]
    talker = toy.roles["talker"]
    doomed = engine.inspect(handles[1].request_id)
    doomed_cache = doomed.states[1][1].cache
    original = type(talker).run
    calls = {"n": 0}

    def flaky(self, kind, inputs):
        if any(i.cache is doomed_cache for i in inputs) and kind == "ar_token":
            calls["n"] += 1
            if calls["n"] >= 5:  # from its 5th talker step on, this request's steps always fail
                raise FloatingPointError("injected fault")
        return original(self, kind, inputs)

    monkeypatch.setattr(type(talker), "run", flaky)
    events = list(engine.events())
    done = {e.request_id: e for e in events if isinstance(e, RequestDone)}
    failed = done[handles[1].request_id]
    assert failed.status is RequestStatus.FAILED and "injected fault" in failed.error
    for i in (0, 2):
        result = handles[i].result()
        assert result.status is RequestStatus.FINISHED
        assert result.tokens == solo[i].tokens and np.array_equal(result.samples, solo[i].samples)
    assert all(ch.is_closed for ch in doomed.slots.values() if hasattr(ch, "is_closed"))
    assert not any(isinstance(e, AudioChunk) and e.request_id == handles[1].request_id and e.index > 0 for e in events)
    assert engine.budget.reserved == 0
