"""Engine behaviour with scripted loops (no model): admission, cancellation, failures, trace."""

from __future__ import annotations

import pytest
from runtime_helpers import run_alone
from scripted_engine import ScriptedComponent, ScriptedLoop, drain, scripted_program

from omni_cli.engine import AdmissionError, Engine
from omni_cli.loops import NO_BOUND, Footprint, LoopStatus, WorkPlan
from omni_cli.spec import SpeakRequest
from omni_cli.spec.stream import RequestDone, RequestStatus


def test_plans_with_equal_keys_run_as_one_batch():
    comp = ScriptedComponent()
    engine = Engine(scripted_program(ScriptedLoop(comp, steps=2)), max_batch=4)
    for i in range(6):
        engine.submit(SpeakRequest("x", request_id=f"q{i}"))
    done = [e for e in drain(engine) if isinstance(e, RequestDone)]
    assert [e.status for e in done] == [RequestStatus.FINISHED] * 6
    assert [len(c) for c in comp.calls] == [4, 2, 4, 2]
    assert engine.budget.reserved == 0


def test_request_that_can_never_fit_fails_fast():
    engine = Engine(scripted_program(ScriptedLoop(ScriptedComponent(), resident=2 << 20)), memory_budget_bytes=1 << 20)
    with pytest.raises(AdmissionError, match="over the 1.0 MiB memory budget"):
        engine.submit(SpeakRequest("x"))
    assert engine.budget.reserved == 0 and engine.is_idle


def test_admission_queues_what_does_not_fit_now_and_refunds_everything():
    loop = ScriptedLoop(ScriptedComponent(), steps=3, resident=400, step_bytes=100)
    engine = Engine(scripted_program(loop), memory_budget_bytes=1000)  # two requests fit at once
    seen_reserved = []
    engine.subscribe(lambda e: seen_reserved.append(engine.budget.reserved))
    for i in range(5):
        engine.submit(SpeakRequest("x", request_id=f"q{i}"))
    drain(engine)
    assert max(seen_reserved) <= 1000
    assert engine.budget.peak_reserved == 1000  # two residents + their two steps as one batch
    assert engine.budget.reserved == 0


class SizedLoop(ScriptedLoop):
    """Each request's resident and step bytes by its id."""

    def __init__(self, component, sizes):
        super().__init__(component, steps=2)
        self.sizes = sizes

    def footprint(self, state, upstream):
        return Footprint(*self.sizes[state.request_id]), NO_BOUND

    def next(self, state):
        plan = super().next(state)
        if plan.__class__ is WorkPlan:
            plan.step_bytes = self.sizes[state.request_id][1]
        return plan


@pytest.mark.parametrize("sizes", [{"q0": (300, 500), "q1": (300, 100)}, {"q0": (400, 300), "q1": (400, 300)}],
                         ids=["room-for-the-running-step", "room-for-its-own-step"])
def test_admission_leaves_room_for_the_largest_step_of_what_would_run(sizes):
    """(resident, step) bytes in a 1000-byte budget: both fit alone, but q1's resident would leave less than
    the largest step free, so q1 waits for q0 to end instead of failing a step that can no longer fit."""
    engine = Engine(scripted_program(SizedLoop(ScriptedComponent(), sizes)), memory_budget_bytes=1000)
    phases = []
    engine.subscribe(lambda e: phases.append((e.request_id, e.phase)) if e.event == "request" else None)
    for rid in sizes:
        engine.submit(SpeakRequest("x", request_id=rid))
    done = [e for e in drain(engine) if isinstance(e, RequestDone)]
    assert [(e.request_id, e.status) for e in done] == [("q0", RequestStatus.FINISHED), ("q1", RequestStatus.FINISHED)]
    assert phases.index(("q1", "admitted")) > phases.index(("q0", "finished"))
    assert engine.budget.peak_reserved <= 1000 and engine.budget.reserved == 0


def test_a_batch_whose_steps_do_not_fit_together_runs_as_smaller_batches():
    comp = ScriptedComponent()
    loop = ScriptedLoop(comp, steps=2, resident=100, step_bytes=300)
    engine = Engine(scripted_program(loop), memory_budget_bytes=1000, max_batch=4)
    for i in range(3):  # all three are admitted (300 resident + 300 headroom), their 900 step bytes are not free
        engine.submit(SpeakRequest("x", request_id=f"q{i}"))
    done = [e for e in drain(engine) if isinstance(e, RequestDone)]
    assert [e.status for e in done] == [RequestStatus.FINISHED] * 3
    assert comp.calls == [["q0"], ["q1", "q2"]] * 2  # halved: 300, then 600 of the 700 free
    assert engine.budget.peak_reserved <= 1000 and engine.budget.reserved == 0


def test_cancel_one_request_at_a_step_boundary_leaves_the_others_alone():
    comp = ScriptedComponent()
    loop = ScriptedLoop(comp, steps=5)
    engine = Engine(scripted_program(loop), max_batch=1)
    handles = [engine.submit(SpeakRequest("x", request_id=f"q{i}")) for i in range(3)]
    engine.step()
    handles[1].cancel()
    done = {e.request_id: e for e in drain(engine) if isinstance(e, RequestDone)}
    assert done["q1"].status is RequestStatus.CANCELLED
    assert done["q0"].status is done["q2"].status is RequestStatus.FINISHED
    assert loop.aborted == ["q1"]
    assert sum(c.count("q1") for c in comp.calls) == 1  # nothing ran after the cancel
    assert engine.budget.reserved == 0


def test_exception_in_one_requests_step_fails_only_that_request():
    comp = ScriptedComponent(fail_on={"q1"})
    engine = Engine(scripted_program(ScriptedLoop(comp, steps=3)), max_batch=4)
    handles = [engine.submit(SpeakRequest("x", request_id=f"q{i}"), collect=True) for i in range(3)]
    done = {e.request_id: e for e in drain(engine) if isinstance(e, RequestDone)}
    assert done["q1"].status is RequestStatus.FAILED and "scripted failure" in done["q1"].error
    assert done["q0"].status is done["q2"].status is RequestStatus.FINISHED
    ok = [h.result().loops["scripted"].outputs["outputs"] for h in handles]
    assert ok[0] == ok[2] == [0, 10, 20]
    assert engine.budget.reserved == 0


def test_trace_has_one_event_per_work_unit(toy):
    engine = Engine(toy)
    events = []
    engine.subscribe(events.append)
    handle = engine.submit(SpeakRequest("Trace me", seed=1), collect=True)
    result = handle.result()
    units = [e for e in events if e.event == "work_unit"]
    assert len(units) == engine.stats.work_units > 0
    per_loop = {loop: sum(1 for e in units if e.loop == loop) for loop in toy.loops}
    assert per_loop["thinker_decode"] == len(result.tokens["thinker_decode"])
    assert per_loop["talker_decode"] == len(result.tokens["talker_decode"])
    assert all(e.dur_s >= 0 and e.batch_size >= 1 and e.request_id == handle.request_id for e in units)
    phases = [e.phase for e in events if e.event == "request"]
    assert phases[:2] == ["submitted", "admitted"] and "first_audio" in phases and phases[-1] == "finished"


def test_talker_stops_at_eos_before_its_bound(toy):
    eos = toy.roles["talker"].eos_token_ids  # the talker's declared end, not an id read off its weights
    ended_on_eos = []
    for seed in range(1, 12):
        tokens = run_alone(toy, SpeakRequest("Stop here", seed=seed)).tokens["talker_decode"]
        assert tokens and not eos & set(tokens[:-1]), (seed, tokens)  # nothing is decoded past an EOS
        ended_on_eos.append(tokens[-1] in eos)
    assert any(ended_on_eos), "no seed ended on the talker's EOS (every one ran to its length bound)"


def test_cancel_a_real_request_closes_everything(toy):
    engine = Engine(toy)
    handle = engine.submit(SpeakRequest("Cancel this long request " * 5, seed=1), collect=True)
    for _ in range(30):
        engine.step()
    wired = engine.inspect(handle.request_id)
    handle.cancel()
    events = list(handle.stream())
    assert isinstance(events[-1], RequestDone) and events[-1].status is RequestStatus.CANCELLED
    for _, state in wired.states:
        assert state.status is LoopStatus.FINISHED
    assert all(ch.is_closed for ch in wired.slots.values() if hasattr(ch, "is_closed"))
    assert engine.inspect(handle.request_id) is None  # the engine let go of its wiring
    assert engine.budget.reserved == 0 and engine.is_idle


class SteppedComponent(ScriptedComponent):
    """Runs its batch one request after another and hands back the exception of the one that broke."""

    def run(self, kind, inputs):
        self.calls.append([i["rid"] for i in inputs])
        return [RuntimeError("stepped failure") if i["rid"] in self.fail_on else i["step"] * 10 for i in inputs]


def test_an_exception_returned_for_one_request_fails_it_without_rerunning_the_batch():
    comp = SteppedComponent(fail_on={"q1"})
    engine = Engine(scripted_program(ScriptedLoop(comp, steps=3)), max_batch=4)
    handles = [engine.submit(SpeakRequest("x", request_id=f"q{i}"), collect=True) for i in range(3)]
    done = {e.request_id: e for e in drain(engine) if isinstance(e, RequestDone)}
    assert done["q1"].status is RequestStatus.FAILED and "stepped failure" in done["q1"].error
    assert [h.result().loops["scripted"].outputs["outputs"] for h in handles[::2]] == [[0, 10, 20]] * 2
    assert comp.calls == [["q0", "q1", "q2"], ["q0", "q2"], ["q0", "q2"]]  # each step ran exactly once
    assert engine.budget.reserved == 0
