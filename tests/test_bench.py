"""What `omni bench` computes from a run: the playback stall, per request."""

from __future__ import annotations

import pytest

from omni_cli.api import load
from omni_cli.bench import PlaybackClock, Workload, run_workload


def test_playback_clock_measures_the_longest_wait_after_the_audio_ran_out():
    clock = PlaybackClock()
    clock.chunk(1.0, 0.5)  # playback starts here: plays until 1.5
    clock.chunk(1.2, 0.5)  # early: queued, plays until 2.0
    assert clock.stall_s == 0.0
    clock.chunk(2.3, 1.0)  # 0.3 s after the audio ran out; plays until 3.3
    clock.chunk(3.4, 0.1)  # 0.1 s late
    assert clock.stall_s == pytest.approx(0.3)
    assert clock.played_until == pytest.approx(3.5)


def test_run_workload_reports_a_stall_per_request():
    result = run_workload(load("qwen2_5_omni_toy"), Workload(num_requests=3, text_chars=30, concurrency=3))
    assert len(result.stall_s) == 3 and all(s >= 0.0 for s in result.stall_s)
    assert result.summary()["stall_max_s"] == max(result.stall_s)
