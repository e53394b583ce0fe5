"""audio_decode's `chunk_growth: slack` (issue 19): chunk sizes from the audio ahead of real time."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from runtime_helpers import toy_with_vocoder

from omni_cli.loops.audio_decode import AudioState
from omni_cli.spec import SpecError, load_card, parse_yaml

TOY = (Path(__file__).resolve().parents[1] / "cards" / "qwen2_5_omni_toy.yaml").read_text(encoding="utf-8")


def test_slack_needs_a_smallest_and_a_largest_chunk():
    with pytest.raises(SpecError) as caught:
        load_card(parse_yaml(TOY.replace("    chunk_codes: 10\n", "    chunk_codes: 10\n    chunk_growth: slack\n"),
                             "toy.yaml"))
    [issue] = caught.value.issues
    lines = TOY.splitlines()
    assert issue.key == "loops.vocoder.chunk_growth" and "first_chunk_codes" in issue.message
    assert issue.line == lines.index("    chunk_codes: 10") + 2  # the line written after chunk_codes
    bad = TOY.replace("    chunk_codes: 10\n", "    chunk_codes: 10\n    chunk_growth: sometimes\n")
    with pytest.raises(SpecError):
        load_card(parse_yaml(bad, "toy.yaml"))


@pytest.fixture
def slack_loop():
    program = toy_with_vocoder(chunk_growth="slack", first_chunk_codes=4, chunk_codes=64)
    return next(loop for loop in program.loops.values() if loop.kind == "audio_decode")


def _state(num_samples: int, first_audio_at: float, per_code_s: float) -> AudioState:
    return AudioState(loop_id="vocoder", request_id="r", num_samples=num_samples, first_audio_at=first_audio_at,
                      last_audio_at=first_audio_at, per_code_s=per_code_s)


@pytest.mark.parametrize("per_code_ms", [0.5, 2.0, 7.0])
def test_a_chunk_is_what_the_audio_ahead_pays_for_and_shrinks_as_it_waits(slack_loop, per_code_ms):
    rate = slack_loop.component.sample_rate
    smallest, largest = slack_loop.spec.first_chunk_codes, slack_loop.spec.chunk_codes
    state = _state(num_samples=rate, first_audio_at=0.0, per_code_s=per_code_ms / 1000)  # 1 s of audio made
    sizes = []
    for now in [0.0, 0.2, 0.5, 0.8, 0.95, 1.0, 1.5]:  # the player has played `now` seconds of it
        slack_loop.clock = lambda now=now: now
        size = slack_loop._chunk_size(state)
        ahead = 1.0 - now
        sizes.append(size)
        assert smallest <= size <= largest
        if smallest < size < largest:  # neither bound: the chunk and its context fit in the share of the slack
            assert (size + slack_loop.context_codes) * state.per_code_s <= ahead * slack_loop.SLACK_SHARE
            assert (size + 1 + slack_loop.context_codes) * state.per_code_s > ahead * slack_loop.SLACK_SHARE
        if ahead <= 0:  # the player is already waiting: the smallest chunk gets it audio soonest
            assert size == smallest
    assert sizes == sorted(sizes, reverse=True) and sizes[0] > sizes[-1]


def test_before_any_audio_the_chunks_follow_the_doubling_schedule(slack_loop):
    state = AudioState(loop_id="vocoder", request_id="r")
    assert [slack_loop._chunk_size(replace(state, step=k)) for k in range(5)] == \
        [slack_loop.spec.chunk_size(k) for k in range(5)]
