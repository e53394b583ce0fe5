"""Engine behaviour with scripted loops (no model): admission, cancellation, failures, stalls, trace."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace

import pytest
from runtime_helpers import run_alone

from omni_cli.engine import AdmissionError, Engine
from omni_cli.loops import DONE, NO_BOUND, Footprint, Loop, LoopResult, LoopState, LoopStatus, Wait, WorkPlan
from omni_cli.program import WiredRequest, size_request
from omni_cli.spec import SpeakRequest
from omni_cli.spec.stream import RequestDone, RequestStatus


class ScriptedComponent:
    role = "scripted"

    def __init__(self, fail_on: set[str] = frozenset()):
        self.calls: list[list[str]] = []
        self.fail_on = set(fail_on)

    def run(self, kind, inputs):
        self.calls.append([i["rid"] for i in inputs])
        if any(i["rid"] in self.fail_on for i in inputs):
            raise RuntimeError("scripted failure")
        return [i["step"] * 10 for i in inputs]


@dataclass
class ScriptedState(LoopState):
    outputs: list = field(default_factory=list)
    waits_left: int = 0


class ScriptedLoop(Loop):
    """`steps` WorkUnits per request; waits `waits` ticks first; resident and step bytes as given."""

    def __init__(self, component, steps=3, waits=0, resident=100, step_bytes=10, stage=0, forever_wait=False):
        self.loop_id, self.component, self.stage = "scripted", component, stage
        self.steps, self.waits, self.resident, self.step_bytes_ = steps, waits, resident, step_bytes
        self.forever_wait = forever_wait
        self.aborted: list[str] = []

    def init(self, rid):
        return ScriptedState(self.loop_id, rid, waits_left=self.waits)

    def footprint(self, state, upstream):
        return Footprint(self.resident, self.step_bytes_), NO_BOUND

    def next(self, state):
        if state.status is LoopStatus.FINISHED:
            return DONE
        if self.forever_wait or state.waits_left:
            state.waits_left -= 1
            return Wait(lambda: "scripted wait")
        if state.step >= self.steps:
            state.status = LoopStatus.FINISHED
            return DONE
        return WorkPlan(self.loop_id, state.request_id, "scripted", state.step, ("scripted",), self.step_bytes_,
                        {"rid": state.request_id, "step": state.step})

    def advance(self, state, plan, output):
        state.outputs.append(output)
        state.step += 1
        return state

    def finalize(self, state):
        return LoopResult(self.loop_id, state.step, {"outputs": list(state.outputs)})

    def abort(self, state):
        self.aborted.append(state.request_id)
        state.status = LoopStatus.FINISHED


def scripted_program(loop, budget_mib=1, max_batch=4):
    card = SimpleNamespace(batching=SimpleNamespace(max_batch=max_batch),
                           limits=SimpleNamespace(memory_budget_mib=budget_mib), sample_rate=24000)

    loops = loop if isinstance(loop, list) else [loop]

    def wire(rid, request, emit):
        states = [(one, one.init(rid)) for one in loops]
        return WiredRequest(rid, states, {}, None, size_request(states, {}))

    return SimpleNamespace(card=card, wire=wire, components={})


def drain(engine):
    return [e for e in engine.events()]


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


def test_a_program_where_every_loop_waits_fails_instead_of_spinning():
    engine = Engine(scripted_program(ScriptedLoop(ScriptedComponent(), forever_wait=True)))
    engine.submit(SpeakRequest("x"))
    done = [e for e in drain(engine) if isinstance(e, RequestDone)]
    assert done[0].status is RequestStatus.FAILED and "stalled" in done[0].error
    assert engine.budget.reserved == 0


class ConsumerLoop(ScriptedLoop):
    """Step k needs the producer's step k done: it waits (real waits, not a countdown) until then."""

    def __init__(self, component, producer_states, steps):
        super().__init__(component, steps=steps, stage=1)
        self.loop_id = "consumer"
        self.producer_states = producer_states
        self.waited = 0

    def init(self, rid):
        return ScriptedState(self.loop_id, rid)

    def next(self, state):
        if state.status is LoopStatus.FINISHED:
            return DONE
        if state.step >= self.steps:
            state.status = LoopStatus.FINISHED
            return DONE
        produced = self.producer_states[state.request_id].outputs
        if len(produced) <= state.step:
            self.waited += 1
            return Wait(lambda: "producer behind")
        return WorkPlan(self.loop_id, state.request_id, "consume", state.step, ("consume",), self.step_bytes_,
                        {"rid": state.request_id, "step": produced[state.step]})


def test_waiting_loops_resume_when_their_input_arrives():
    producer_states = {}

    class Producer(ScriptedLoop):
        def init(self, rid):
            producer_states[rid] = super().init(rid)
            return producer_states[rid]

    producer = Producer(ScriptedComponent(), steps=3)  # its first step runs in the tick the consumer waits
    consumer = ConsumerLoop(ScriptedComponent(), producer_states, steps=3)
    engine = Engine(scripted_program([producer, consumer]))
    handle = engine.submit(SpeakRequest("x"), collect=True)
    assert [e.status for e in drain(engine) if isinstance(e, RequestDone)] == [RequestStatus.FINISHED]
    loops = handle.result().loops
    assert loops["scripted"].outputs["outputs"] == [0, 10, 20]
    assert loops["consumer"].outputs["outputs"] == [0, 100, 200]  # each consumed what its producer step made
    assert consumer.waited >= 1 and engine.budget.reserved == 0


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
