"""`workers: N` on a process placement: one component in N worker processes, a batch split by request.

The same tokens and samples as inline, each request's steps on one worker (its state lives there), every
worker used and left holding nothing, a dead worker failing only its own requests, and the card and
command-line rules that go with it."""

from __future__ import annotations

import gc
import time
from concurrent.futures import Future

import numpy as np
import pytest
from test_placement_runs import MIX, deadline, run
from test_placement_spec import NAMES, card_with, messages

from omni_cli.backends.base import StepInput
from omni_cli.engine import Engine
from omni_cli.engine.executor import BatchOutcome
from omni_cli.engine.executors import close_executors, make_executors, placement_of
from omni_cli.engine.executors.workers import WorkersExecutor
from omni_cli.spec import SpeakRequest, SpecError
from omni_cli.spec.placement import override_placement
from omni_cli.spec.stream import RequestStatus


@pytest.fixture(scope="module")
def two_vocoders(toy):
    """The talker and the vocoder with two workers each (the thinker inline: no direct hand-off pair)."""
    placement = placement_of(toy, override_placement(toy.card.placement, "talker=process:2,vocoder=process:2",
                                                     list(toy.components)))
    executors = make_executors(toy, placement)
    yield executors
    close_executors(executors)


def test_two_workers_make_inline_s_tokens_and_samples_and_both_run(toy, two_vocoders):
    inline = run(toy, None, MIX)[1]
    vocoder = two_vocoders["vocoder"]
    assert isinstance(vocoder, WorkersExecutor) and len(vocoder.workers) == 2
    engine = Engine(toy, executors=two_vocoders)
    handles = [engine.submit(r, collect=True) for r in MIX]
    held = [0, 0]
    with deadline(120):
        while not engine.is_idle:
            engine.step()
            for i, worker in enumerate(vocoder.workers):
                held[i] = max(held[i], worker.live_states())
    for a, handle in zip(inline, handles, strict=True):
        b = handle.result()
        assert b.status is RequestStatus.FINISHED, b.error
        assert a.tokens == b.tokens and np.array_equal(a.samples, b.samples) and a.samples.size > 0
    assert held[0] > 0 and held[1] > 0, held  # both workers held requests' states at some point
    gc.collect()  # a finished request's states can sit in reference cycles until the collector runs
    assert [two_vocoders[name].live_states() for name in ("talker", "vocoder")] == [0, 0]  # every state released


def test_a_dead_worker_fails_its_own_requests_only(toy):
    placement = placement_of(toy, override_placement(toy.card.placement, "vocoder=process:2", list(toy.components)))
    executors = make_executors(toy, placement)
    try:
        engine = Engine(toy, executors=executors)
        long_text = "A sentence long enough that every request is still speaking when one worker dies."
        handles = [engine.submit(SpeakRequest(long_text, seed=i)) for i in range(4)]
        vocoder = executors["vocoder"]
        with deadline(120):
            while sum(w.live_states() > 0 for w in vocoder.workers) < 2:  # both workers hold requests
                engine.step()
            vocoder.workers[0].kill()
            for _ in engine.events():
                pass
        statuses = [h.status for h in handles]
        failed, finished = statuses.count(RequestStatus.FAILED), statuses.count(RequestStatus.FINISHED)
        assert failed >= 1 and finished >= 1 and failed + finished == 4, statuses  # the other worker's went on
        errors = [h.result().error for h in handles if h.status is RequestStatus.FAILED]
        assert all("vocoder: its worker process died" in e for e in errors), errors
    finally:
        close_executors(executors)


class _Fake:
    """An executor whose calls finish when the test says, outputs tagged with the worker's name."""

    kind = "process"

    def __init__(self, name: str, fail: bool = False):
        self.name, self.fail, self.calls = name, fail, []

    def submit(self, kind, inputs):
        future: Future = Future()
        self.calls.append((inputs, future))
        return future

    def finish(self, start: float, dur: float) -> None:
        inputs, future = self.calls.pop(0)
        if self.fail:
            future.set_exception(RuntimeError(f"{self.name} died"))
        else:
            future.set_result(BatchOutcome([f"{self.name}:{x.state.tag}" for x in inputs], start, dur))


class _State:
    def __init__(self, tag: str):
        self.tag = tag


class _Input(StepInput):
    state_field = "state"

    def __init__(self, state):
        self.state = state


def test_a_batch_is_split_by_home_and_comes_back_in_order():
    a, b = _Fake("a"), _Fake("b")
    workers = WorkersExecutor("vocoder", [a, b])
    states = [_State(str(i)) for i in range(4)]
    first = workers.submit("k", [_Input(s) for s in states])  # homes: a, b, a, b (least loaded first)
    assert [len(c[0]) for c in a.calls + b.calls] == [2, 2]
    a.finish(10.0, 1.0)
    assert not first.done()  # waits for every part
    b.finish(10.5, 2.0)
    outcome = first.result(timeout=1)
    assert outcome.outputs == ["a:0", "b:1", "a:2", "b:3"]
    assert (outcome.start_s, outcome.dur_s) == (10.0, 2.5)
    second = workers.submit("k", [_Input(states[3]), _Input(states[0])])  # each request stays at home
    b.finish(20.0, 1.0)
    a.finish(20.0, 1.0)
    assert second.result(timeout=1).outputs == ["b:3", "a:0"]
    del states[0], first, second  # request 0 ends: worker a holds one request, b two
    newcomer = workers.submit("k", [_Input(_State("n"))])
    assert newcomer is a.calls[0][1]  # one part: the worker's own future, and the least loaded worker's


def test_a_part_that_fails_fails_its_requests_and_every_part_failing_fails_the_call():
    a, b = _Fake("a", fail=True), _Fake("b")
    workers = WorkersExecutor("vocoder", [a, b])
    states = [_State(str(i)) for i in range(2)]
    future = workers.submit("k", [_Input(s) for s in states])
    a.finish(0.0, 1.0)
    b.finish(time.perf_counter(), 1.0)
    outputs = future.result(timeout=1).outputs
    assert isinstance(outputs[0], RuntimeError) and outputs[1] == "b:1"
    b.fail = True
    future = workers.submit("k", [_Input(s) for s in states])
    a.finish(0.0, 1.0)
    b.finish(0.0, 1.0)
    with pytest.raises(RuntimeError, match="died"):
        future.result(timeout=1)


def test_workers_need_a_process_and_the_command_line_sets_them():
    card = card_with("  vocoder: {executor: process, workers: 3}\n")
    assert card.placement["vocoder"].workers == 3
    found = messages("  vocoder: {executor: thread, workers: 2}\n")
    assert len(found) == 1 and found[0].endswith("placement.vocoder.workers: needs executor process (this one is "
                                                 "thread)"), found
    assert override_placement(card.placement, "vocoder=ray", NAMES)["vocoder"].workers == 1
    assert override_placement({}, "vocoder=process:4", NAMES)["vocoder"].workers == 4
    for bad in ("vocoder=thread:2", "vocoder=process:0", "vocoder=process:x"):
        with pytest.raises(SpecError, match="expected process:N"):
            override_placement({}, bad, NAMES)


def test_a_thinker_and_talker_handing_off_directly_cannot_have_several_workers(toy):
    placement = placement_of(toy, override_placement(toy.card.placement, "thinker=process,talker=process:2",
                                                     list(toy.components)))
    with pytest.raises(SpecError) as caught:
        make_executors(toy, placement)
    assert str(caught.value) == ("<command line>: --placement: talker and thinker hand off directly between their "
                                 "workers, one to one: place thinker inline to give talker several")
