"""Scripted test doubles for the engine: a component whose outputs are known, a loop that steps as told."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace

from omni_cli.backends.base import Component
from omni_cli.loops import DONE, NO_BOUND, Footprint, Loop, LoopResult, LoopState, LoopStatus, Wait, WorkPlan
from omni_cli.program import WiredRequest, size_request


class ScriptedComponent(Component):
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
        return WorkPlan("scripted", state.step, (self.loop_id,), self.step_bytes_,
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

    def wire(rid, request, emit, roles=None):
        states = [(one, one.init(rid)) for one in loops]
        return WiredRequest(rid, states, {}, None, size_request(states, {}))

    return SimpleNamespace(card=card, wire=wire, components={})


def drain(engine):
    """Every event of every request, driving the engine until idle."""
    return [e for e in engine.events()]


