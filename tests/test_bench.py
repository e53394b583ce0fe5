"""What `omni bench` computes from a run: each figure from measurements whose answer is known by hand."""

from __future__ import annotations

import hashlib

import pytest

from omni_cli.api import load
from omni_cli.bench import BenchResult, PlaybackClock, Workload, run_workload
from omni_cli.bench.workload import FirstChunkPath
from omni_cli.engine.trace import RequestEvent, WorkUnitEvent


def test_playback_clock_measures_the_longest_wait_after_the_audio_ran_out():
    clock = PlaybackClock()
    clock.chunk(1.0, 0.5)  # playback starts here: plays until 1.5
    clock.chunk(1.2, 0.5)  # early: queued, plays until 2.0
    assert clock.stall_s == 0.0
    clock.chunk(2.3, 1.0)  # 0.3 s after the audio ran out; plays until 3.3
    clock.chunk(3.4, 0.1)  # 0.1 s late
    assert clock.stall_s == pytest.approx(0.3)
    assert clock.played_until == pytest.approx(3.5)


def test_summary_figures_from_known_measurements():
    result = BenchResult("known", Workload(num_requests=2), wall_s=4.0, ttfa_s=[0.3, 0.6], latency_s=[2.0, 3.0],
                         audio_s=[1.0, 2.0], work_units=100, overhead_s=0.2, critical_s=[0.2, 0.3],
                         stall_s=[0.0, 0.25])
    s = result.summary()
    assert s["overhead_share"] == pytest.approx(0.05)  # 0.2 s of the engine's own time in a 4 s run
    assert s["ttfa_over_critical_p50"] == pytest.approx(1.75)  # 0.3 / 0.2 = 1.5 and 0.6 / 0.3 = 2.0
    assert s["critical_p50_s"] == pytest.approx(0.25)
    assert s["ttfa_p50_s"] == pytest.approx(0.45)
    assert s["rtf_p50"] == pytest.approx(1.75)  # 2.0 s for 1 s of audio, 3.0 s for 2 s
    assert s["audio_s_per_wall_s"] == pytest.approx(0.75) and s["work_units_per_s"] == pytest.approx(25.0)
    assert s["stall_max_s"] == 0.25 and s["audio_s_total"] == 3.0


def test_first_chunk_path_sums_a_requests_own_units_up_to_its_first_audio_chunk():
    path = FirstChunkPath()

    def unit(rid, kind, dur_s):
        return WorkUnitEvent(rid, "loop", kind, 0, 1, 0.0, dur_s, 0)

    for event in [unit("a", "ar_prefill", 0.1), unit("b", "ar_prefill", 0.5), unit("a", "ar_token", 0.05),
                  RequestEvent("a", "admitted", 0.0), unit("a", "audio_chunk", 0.2),
                  unit("a", "ar_token", 0.07), unit("a", "audio_chunk", 0.3)]:  # after a's first chunk: not on it
        path.on_event(event)
    assert path.path_s == pytest.approx({"a": 0.35, "b": 0.5})


def test_run_workload_measures_what_each_request_made():
    program = load("qwen2_5_omni_toy")
    result = run_workload(program, Workload(num_requests=3, text_chars=30, concurrency=3), keep_outputs=True)
    rate = program.card.sample_rate
    assert [o.status.value for o in result.outputs] == ["finished"] * 3
    assert result.audio_s == pytest.approx([o.samples.size / rate for o in result.outputs])
    assert result.digests == [hashlib.sha256(o.samples.tobytes()).hexdigest() for o in result.outputs]
    eos, chunk = program.roles["talker"].eos_token_ids, program.card.loops["vocoder"].chunk_codes
    codes = [sum(1 for t in o.tokens["talker_decode"] if t not in eos) for o in result.outputs]
    assert [o.samples.size for o in result.outputs] == [n * program.roles["vocoder"].samples_per_code for n in codes]
    tokens = sum(len(t) for o in result.outputs for t in o.tokens.values())
    assert result.work_units == tokens + sum(-(-n // chunk) for n in codes)  # a unit per token and per chunk
    assert len(result.stall_s) == 3 and all(s >= 0.0 for s in result.stall_s)
    # first audio waits at least for the component time of its own chain: the ratio cannot go under 1
    assert all(0 < c <= t for c, t in zip(result.critical_s, result.ttfa_s, strict=True))
    assert 0 < result.overhead_s < result.wall_s
