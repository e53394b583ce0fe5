"""Pacing is the scheduler's: the vocoder loop's chunks follow from its inputs and the Pace it is given alone,
and the scheduler's Pacer changes the Pace when the clock says the machine is slow (a fake clock: no real time)."""

from __future__ import annotations

import ast
from pathlib import Path
from types import SimpleNamespace

import pytest
from runtime_helpers import speak_recording_chunks, toy_with_vocoder

from omni_cli.engine.pacing import Pacer
from omni_cli.loops import Pace, WorkPlan, audio_decode
from omni_cli.loops.audio_decode import AudioDecodeLoop
from omni_cli.loops.base import LoopStatus


def _recording_paces(monkeypatch, replay: dict[int, Pace] | None = None) -> dict[int, Pace]:
    """Wrap the loop's next: record the Pace of each step it plans, or give it `replay`'s instead."""
    seen: dict[int, Pace] = {}
    original = AudioDecodeLoop.next

    def paced(self, state, pace=None):
        pace = Pace() if pace is None else pace
        if replay is not None:
            pace = replay[state.step]
        plan = original(self, state, pace)
        if plan.__class__ is WorkPlan:
            seen[state.step] = pace
        return plan

    monkeypatch.setattr(AudioDecodeLoop, "next", paced)
    return seen


def test_same_inputs_and_pace_give_the_same_chunks_whatever_the_clock(monkeypatch):
    program = toy_with_vocoder(first_chunk_codes=4, chunk_codes=32, pace="largest_when_slow")
    code_s = program.loops["vocoder"].component.samples_per_code / program.loops["vocoder"].component.sample_rate
    with monkeypatch.context() as patched:
        paces = _recording_paces(patched)
        slow_audio, slow = speak_recording_chunks(monkeypatch, program, seconds_per_call=1000 * code_s)
    assert any(p.largest for p in paces.values())  # the slow clock moved the Pace
    with monkeypatch.context() as patched:
        _recording_paces(patched)
        _, fast = speak_recording_chunks(monkeypatch, program, seconds_per_call=0.0)
    assert fast != slow  # on a fast clock the scheduler paces it otherwise
    with monkeypatch.context() as patched:  # the fast clock again, with the slow run's Paces given to the loop
        _recording_paces(patched, replay=paces)
        replayed_audio, replayed = speak_recording_chunks(monkeypatch, program, seconds_per_call=0.0)
    assert replayed == slow and replayed_audio.tobytes() == slow_audio.tobytes()


@pytest.mark.parametrize("module", sorted(Path(audio_decode.__file__).parent.glob("*.py")), ids=lambda p: p.name)
def test_no_loop_reads_the_clock_or_keeps_other_requests(module):
    """The driven loops (omni_cli/loops) import no clock and no weak registry of requests: pacing is the
    scheduler's (engine/pacing.py)."""
    tree = ast.parse(module.read_text(encoding="utf-8"))
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))
                for alias in node.names} | {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert not imported & {"time", "weakref", "perf_counter", "monotonic", "WeakValueDictionary"}, imported


class _Loop:
    loop_id, pacing = "vocoder", "largest_when_slow"

    def __init__(self):
        self.paces: list[Pace] = []

    def next(self, state, pace):
        self.paces.append(pace)
        return WorkPlan("audio_chunk", 0, ("vocoder",), 0, None, None, 10)


def test_the_pacer_asks_for_the_largest_once_a_step_took_over_twice_its_audio():
    rate, now = 1000, [0.0]
    pacer, loop = Pacer(rate, clock=lambda: now[0]), _Loop()
    request = SimpleNamespace(audio_samples=0, pacing={})
    for took_s, audio_s in [(1.5, 1.0), (2.5, 1.0), (0.5, 1.0)]:  # each step: seconds from plan to fold, its audio
        pacer.new_tick()
        plan = pacer.next(request, loop, None, list)
        now[0] += took_s
        request.audio_samples += int(audio_s * rate)
        pacer.folded(request, loop, plan)
    pacer.new_tick()
    pacer.next(request, loop, None, list)
    # the first step asked for the schedule; 1.5 s for 1 s of audio keeps it; 2.5 s asks for the largest; 0.5 s
    # (faster than real time) gives the schedule back
    assert [p.largest for p in loop.paces] == [False, False, True, False]
    assert not any(p.shared for p in loop.paces) and all(p.affordable is None for p in loop.paces)


def test_the_pacer_says_when_other_requests_share_the_loop():
    pacer, loop = Pacer(1000), _Loop()

    def request(status):
        return SimpleNamespace(audio_samples=0, pacing={}, wired=SimpleNamespace(states=[(loop, SimpleNamespace(status=status))]))

    mine, other, done = request(LoopStatus.RUNNING), request(LoopStatus.WAITING), request(LoopStatus.FINISHED)
    for everyone in ([mine], [mine, done], [mine, other]):
        pacer.new_tick()
        pacer.next(mine, loop, None, lambda everyone=everyone: everyone)
    assert [p.shared for p in loop.paces] == [False, False, True]  # a finished request shares nothing
