"""`pace: largest_when_slow` (latency far slower than real time): once a request's chunk took over twice as long
to make as its audio lasts, the scheduler's pacing makes its next chunk chunk_codes long."""

from __future__ import annotations

import numpy as np
import pytest
from runtime_helpers import speak_recording_chunks, toy_with_vocoder


def _program(largest_when_slow: bool, first_audio_codes: int = 0):
    return toy_with_vocoder(first_chunk_codes=8, chunk_codes=32, pace="largest_when_slow" if largest_when_slow
                            else "schedule", first_audio_codes=first_audio_codes)


def test_a_chunk_slower_than_its_audio_makes_the_next_one_the_largest(monkeypatch):
    program = _program(True)
    loop = program.loops["vocoder"]
    code_s = loop.component.samples_per_code / loop.component.sample_rate
    slow, chunks = speak_recording_chunks(monkeypatch, program, seconds_per_call=1000 * code_s)  # every chunk far behind
    assert chunks[0] == (0, 8)  # the first chunk is the card's: nothing is known before it
    assert len(chunks) >= 3 and all(end - start == 32 for start, end in chunks[1:-1]), chunks
    assert chunks[1] == (8, 40) and 0 < chunks[-1][1] - chunks[-1][0] <= 32
    fast, schedule = speak_recording_chunks(monkeypatch, _program(True), seconds_per_call=0.0)  # every chunk ahead
    assert schedule[:3] == [(0, 8), (8, 24), (24, 56)], schedule
    # the toy vocoder makes the same samples for any chunking: the rule moved no audio
    assert slow.size > 0 and slow.shape == fast.shape
    np.testing.assert_allclose(slow, fast, rtol=0, atol=1e-6)


def test_off_by_default_the_schedule_holds_however_slow(monkeypatch):
    program = _program(False)
    loop = program.loops["vocoder"]
    assert type(loop.spec)(kind="audio_decode", component="v", prompt_slot="s").pace == "schedule"
    code_s = loop.component.samples_per_code / loop.component.sample_rate
    _, chunks = speak_recording_chunks(monkeypatch, program, seconds_per_call=1000 * code_s)
    assert chunks[:3] == [(0, 8), (8, 24), (24, 56)], chunks


@pytest.mark.parametrize(("codes_per_call", "next_chunk"), [(12, (8, 24)), (17, (8, 40))])
def test_behind_is_over_twice_the_chunks_audio(monkeypatch, codes_per_call, next_chunk):
    """The first chunk (8 codes) taking 1.5 times its audio keeps the schedule: on a machine near real time a
    small chunk's fixed cost does that, and a 32-code chunk next would come later; over twice, the rule acts."""
    program = _program(True)
    loop = program.loops["vocoder"]
    code_s = loop.component.samples_per_code / loop.component.sample_rate
    _, chunks = speak_recording_chunks(monkeypatch, program, seconds_per_call=codes_per_call * code_s)
    assert chunks[:2] == [(0, 8), next_chunk], chunks


@pytest.mark.parametrize("behind", [False, True])
def test_a_split_first_chunk_is_judged_over_its_window_and_both_pieces(monkeypatch, behind):
    """A first chunk in two pieces: the time from its window's plan to the second piece's audio (both
    vocoder calls) against both pieces' audio."""
    program = _program(True, first_audio_codes=3)
    loop = program.loops["vocoder"]
    code_s = loop.component.samples_per_code / loop.component.sample_rate
    # 8 codes of audio from two calls: behind when the two take over 16 codes' audio, a call over 8. (Timed from
    # the second piece's plan, 9 would not be behind, 9 < 16; against the second piece's 5 codes alone, 9 < 10
    # would not be either)
    per_call = (9 if behind else 7) * code_s
    _, chunks = speak_recording_chunks(monkeypatch, program, seconds_per_call=per_call)
    assert chunks[:2] == [(0, 3), (3, 8)]
    assert chunks[2] == ((8, 40) if behind else (8, 24)), chunks


def test_a_card_shows_it_and_takes_it_from_set():
    from typer.testing import CliRunner

    from omni_cli.cli.app import app

    runner = CliRunner()
    on = runner.invoke(app, ["cards", "show", "qwen2_5_omni_toy", "--set", "loops.vocoder.pace=largest_when_slow"],
                       env={"COLUMNS": "200"})
    assert on.exit_code == 0 and "10 after a chunk slower than its audio" in on.output, on.output
    off = runner.invoke(app, ["cards", "show", "qwen2_5_omni_toy"], env={"COLUMNS": "200"})
    assert off.exit_code == 0 and "slower than its audio" not in off.output
    bad = runner.invoke(app, ["cards", "validate", "qwen2_5_omni_toy", "--set", "loops.vocoder.pace=3"])
    assert bad.exit_code == 2 and "pace" in bad.output and "Traceback" not in bad.output, bad.output
    # the key it replaced is refused with the line that names the new one
    old = runner.invoke(app, ["cards", "validate", "qwen2_5_omni_toy", "--set", "loops.vocoder.largest_when_slow=true"])
    assert old.exit_code == 2 and "write `pace: largest_when_slow`" in old.output and "Traceback" not in old.output, \
        old.output
