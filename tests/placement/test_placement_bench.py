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


def test_a_metered_run_counts_what_crosses_the_driver(toy, executors):
    from omni_cli.bench.crossing import metered, totals
    from omni_cli.engine import Engine
    from omni_cli.spec import SpeakRequest
    from omni_cli.spec.stream import AudioChunk

    for kind, crosses in (("thread", False), ("process", True)):
        placed_executors = executors(kind)
        wrapped, crossings = metered(toy, placed_executors, dict.fromkeys(placed_executors, crosses))
        engine = Engine(toy, executors=wrapped)
        for seed in (1, 2):
            engine.submit(SpeakRequest("Hello there, world", seed=seed))
        samples = sum(e.num_samples for e in engine.events() if isinstance(e, AudioChunk))
        by = {c.component: c for c in crossings}
        assert all(c.work_units > 0 for c in crossings)
        if not crosses:  # a thread shares the driver's memory
            assert totals(crossings)["driver_bytes_per_unit"] == 0
            continue
        d_model = toy.card.components["thinker"].params["d_model"]
        # each thinker token's hidden state and input embedding (float32) come back through the driver ...
        assert by["thinker"].hidden_back_bytes >= 2 * d_model * 4 * by["thinker"].work_units
        # ... and the talker's conditioning made from them goes out again (a thinker reply vector a step)
        assert by["talker"].conditioning_out_bytes >= d_model * 4 * by["talker"].work_units
        # ... while the talker sends back its logits alone: its own states feed nobody (the vocoder reads codes)
        talker = toy.components["talker"]
        assert by["talker"].hidden_back_bytes == 0
        assert by["talker"].received_bytes < (talker.vocab_size + talker.params.d_model) * 4 * by["talker"].work_units
        handoff = by["thinker"].hidden_back_bytes + by["talker"].conditioning_out_bytes
        units = sum(c.work_units for c in crossings)
        assert totals(crossings)["handoff_bytes_per_unit"] == handoff / units
        assert by["vocoder"].received_bytes >= 4 * samples > 0  # the audio itself, float32
        assert by["vocoder"].hidden_back_bytes == by["vocoder"].conditioning_out_bytes == 0
