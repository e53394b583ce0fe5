"""Waits: a loop that waits stays running until its input arrives, and a program that only waits fails.

Each test here fails if the engine mishandles a Wait: ends the waiting request as finished, runs it
anyway, or spins (breaking the scheduler's Wait branch turns at least one of them red).
"""

from __future__ import annotations

from scripted_engine import ScriptedComponent, ScriptedLoop, ScriptedState, drain, scripted_program

from omni_cli.engine import Engine
from omni_cli.loops import DONE, LoopStatus, Wait, WorkPlan
from omni_cli.spec import SpeakRequest
from omni_cli.spec.stream import RequestDone, RequestStatus


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
        return WorkPlan("consume", state.step, ("consume",), self.step_bytes_,
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


class Relay(ScriptedLoop):
    """Request "p" makes a value per step; request "c" passes each on once "p" has made it and waits
    until then: while "p" runs, every loop of "c" waits on input from outside its request."""

    def __init__(self, component):
        super().__init__(component, steps=3)
        self.made: list = []
        self.waited = 0

    def next(self, state):
        if state.request_id != "c" or state.status is LoopStatus.FINISHED or state.step >= self.steps:
            return super().next(state)
        if len(self.made) <= state.step:
            self.waited += 1
            return Wait(lambda: "nothing made yet")
        return WorkPlan("scripted", state.step, ("scripted",), self.step_bytes_,
                        {"rid": "c", "step": self.made[state.step]})

    def advance(self, state, plan, output):
        if state.request_id == "p":
            self.made.append(output)
        return super().advance(state, plan, output)


def test_a_request_whose_every_loop_waits_stays_running_until_its_input_arrives():
    loop = Relay(ScriptedComponent())
    engine = Engine(scripted_program(loop), max_batch=4)
    handles = {rid: engine.submit(SpeakRequest("x", request_id=rid), collect=True) for rid in ("p", "c")}
    done = {e.request_id: e.status for e in drain(engine) if isinstance(e, RequestDone)}
    assert done == {"p": RequestStatus.FINISHED, "c": RequestStatus.FINISHED}
    assert handles["p"].result().loops["scripted"].outputs["outputs"] == [0, 10, 20]
    assert handles["c"].result().loops["scripted"].outputs["outputs"] == [0, 100, 200]  # what "p" made, x10
    assert loop.waited >= 1 and engine.budget.reserved == 0
