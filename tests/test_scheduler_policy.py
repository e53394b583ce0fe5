"""The scheduling policy decides the order of a tick's calls: outputs are the same either way (the parity
suite), so only these tests fail if latency-first stops putting the stage nearest the audio first or
round-robin stops rotating which request goes first."""

from __future__ import annotations

import pytest
from scripted_engine import ScriptedComponent, ScriptedLoop, drain, scripted_program

from omni_cli.engine import Engine
from omni_cli.spec import SpeakRequest


class LoggedComponent(ScriptedComponent):
    def __init__(self, name, log):
        super().__init__()
        self.name, self.log = name, log

    def run(self, kind, inputs):
        self.log.append((self.name, [i["rid"] for i in inputs]))
        return super().run(kind, inputs)


def two_stage_loops(log):
    near = ScriptedLoop(LoggedComponent("vocoder", log), steps=3, stage=1)
    far = ScriptedLoop(LoggedComponent("thinker", log), steps=3, stage=0)
    near.loop_id, far.loop_id = "near", "far"
    return [far, near]  # cascade order: the far stage is wired first


@pytest.mark.parametrize(("policy", "first"), [("latency-first", "vocoder"), ("round-robin", "thinker")])
def test_each_tick_runs_the_stage_the_policy_puts_first(policy, first):
    log: list = []
    engine = Engine(scripted_program(two_stage_loops(log)), policy=policy)
    engine.submit(SpeakRequest("x", request_id="q0"))
    drain(engine)
    other = "thinker" if first == "vocoder" else "vocoder"
    assert [name for name, _ in log] == [first, other] * 3  # both stages have a plan every tick


@pytest.mark.parametrize(("policy", "leaders"), [("latency-first", ["q0", "q0", "q0"]),
                                                 ("round-robin", ["q1", "q2", "q0"])])
def test_round_robin_rotates_which_request_goes_first(policy, leaders):
    log: list = []
    engine = Engine(scripted_program(ScriptedLoop(LoggedComponent("one", log), steps=3)), policy=policy, max_batch=1)
    for i in range(3):
        engine.submit(SpeakRequest("x", request_id=f"q{i}"))
    drain(engine)
    ticks = [log[k:k + 3] for k in range(0, len(log), 3)]
    assert len(ticks) == 3 and all(sorted(rid for _, (rid,) in tick) == ["q0", "q1", "q2"] for tick in ticks)
    assert [tick[0][1][0] for tick in ticks] == leaders
