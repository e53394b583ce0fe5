"""`pace: slack`: the scheduler's pacing affords each chunk what the player's buffered audio pays for, and the
vocoder loop sizes its chunk from that alone."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
from runtime_helpers import speak_recording_chunks, toy_with_vocoder

from omni_cli.engine.pacing import Pacer, PaceRecord
from omni_cli.loops import Pace, Wait
from omni_cli.loops.audio_decode import AudioState
from omni_cli.spec import SpecError, load_card, parse_yaml

TOY = (Path(__file__).resolve().parents[1] / "cards" / "qwen2_5_omni_toy.yaml").read_text(encoding="utf-8")


def test_slack_needs_a_smallest_and_a_largest_chunk():
    with pytest.raises(SpecError) as caught:
        load_card(parse_yaml(TOY.replace("    chunk_codes: 10\n", "    chunk_codes: 10\n    pace: slack\n"), "toy.yaml"))
    [issue] = caught.value.issues
    lines = TOY.splitlines()
    assert issue.key == "loops.vocoder.pace" and "first_chunk_codes" in issue.message
    assert issue.line == lines.index("    chunk_codes: 10") + 2  # the line written after chunk_codes
    for bad in ("    pace: sometimes\n", "    chunk_growth: slack\n"):  # a value it does not know; the retired key
        with pytest.raises(SpecError) as caught:
            load_card(parse_yaml(TOY.replace("    chunk_codes: 10\n", "    chunk_codes: 10\n" + bad), "toy.yaml"))
    assert "write `pace: slack`" in caught.value.issues[0].message


class _PacedLoop:
    """A paced loop that only hears its Pace."""

    loop_id, pacing = "vocoder", "slack"

    def __init__(self):
        self.paces: list[Pace] = []

    def next(self, state, pace):
        self.paces.append(pace)
        return Wait(lambda: "scripted")


@pytest.mark.parametrize("per_code_ms", [0.5, 2.0, 7.0])
def test_the_pacer_affords_what_the_buffer_pays_for_and_less_as_it_plays(per_code_ms):
    rate, now = 24000, [0.0]
    pacer = Pacer(rate, clock=lambda: now[0])
    per_code_s = per_code_ms / 1000
    # 1 s of audio made; the player started at 0, and the last chunk cost per_code_s a unit of work
    record = PaceRecord(first_audio_at=0.0, last_audio_at=0.0, per_unit_s=per_code_s)
    request, loop = SimpleNamespace(audio_samples=rate, pacing={"vocoder": record}), _PacedLoop()
    played = [0.0, 0.2, 0.5, 0.8, 0.95, 1.0, 1.5]  # seconds the player has played of it
    for t in played:
        now[0] = t
        pacer.new_tick()
        pacer.next(request, loop, None, list)
    afforded = [p.affordable for p in loop.paces]
    assert afforded == [int((1.0 - t) * Pacer.SLACK_SHARE / per_code_s) for t in played]
    assert afforded == sorted(afforded, reverse=True) and afforded[0] > 0 >= afforded[-1]


@pytest.fixture
def slack_loop():
    program = toy_with_vocoder(pace="slack", first_chunk_codes=4, chunk_codes=64)
    return program.loops["vocoder"]


def test_a_chunk_is_what_its_pace_affords_less_its_context(slack_loop):
    smallest, largest, context = 4, 64, slack_loop.context_codes
    for affordable in (-50, 0, smallest + context, 20 + context, 64 + context, 500):
        size, _ = slack_loop._planned(AudioState(loop_id="vocoder", request_id="r", step=3), Pace(affordable=affordable))
        assert size == max(smallest, min(largest, affordable - context))


def test_before_any_audio_the_chunks_follow_the_doubling_schedule(slack_loop):
    sizes = [slack_loop._planned(AudioState(loop_id="vocoder", request_id="r", step=k), Pace())[0] for k in range(5)]
    assert sizes == [slack_loop.spec.chunk_size(k) for k in range(5)]


def test_a_fast_machine_grows_the_chunks_and_a_slow_one_keeps_them_small(monkeypatch):
    program = toy_with_vocoder(pace="slack", first_chunk_codes=4, chunk_codes=32)
    code_s = program.loops["vocoder"].component.samples_per_code / program.loops["vocoder"].component.sample_rate
    _, fast = speak_recording_chunks(monkeypatch, program, seconds_per_call=0.01 * code_s)
    _, slow = speak_recording_chunks(monkeypatch, program, seconds_per_call=1000 * code_s)
    assert fast[0] == slow[0] == (0, 4)  # nothing is known before the first chunk
    assert fast[1] == (4, 36), fast  # far ahead of the player: the largest chunk
    assert all(end - start == 4 for start, end in slow[1:-1]), slow  # the player waits: the smallest, soonest
