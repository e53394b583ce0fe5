"""`omni bench --placement`: each placement beside inline, with the same audio and its per-call cost."""

from __future__ import annotations

from omni_cli.bench.placement import placement_suite


def test_the_placement_bench_compares_the_same_audio_and_times_each_call(toy):
    rows = placement_suite(toy, ["thread"], num_requests=2, short_chars=20, concurrency=2)
    assert [r["placement"] for r in rows] == ["inline", "thread"]
    for row in rows:
        assert row["same_audio"] is True and row["audio_s_per_wall_s"] > 0
        assert row["calls"] > 0 and 0 < row["component_us"] <= row["call_us"] + 1e-9
    assert rows[0]["vs_inline"] == 1.0 and rows[1]["bytes_per_call"] == 0  # a thread copies nothing
