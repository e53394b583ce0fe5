"""`omni bench --placement`: each placement beside inline, with the same audio and its per-call cost."""

from __future__ import annotations

import numpy as np

from omni_cli.bench.placement import placed, placement_suite


def test_the_placement_bench_compares_the_same_audio_and_times_each_call(toy):
    rows = placement_suite(toy, ["thread"], num_requests=2, short_chars=20, concurrency=2)
    assert [r["placement"] for r in rows] == ["inline", "thread"]
    for row in rows:
        assert row["same_audio"] is True and row["audio_s_per_wall_s"] > 0
        assert row["calls"] > 0 and 0 < row["component_us"] <= row["call_us"] + 1e-9
    assert rows[0]["vs_inline"] == 1.0 and rows[1]["bytes_per_call"] == 0  # a thread copies nothing
    for row in rows:  # each stage's calls, timed once per call: every loop ran, none longer than the run
        assert set(row["stage_busy_s"]) == set(toy.loops) and all(0 < s <= row["wall_s"] for s in row["stage_busy_s"].values())
    # inline ran every stage and the engine one after another, so overlap can only shorten it
    assert rows[0]["overlap_bound_per_stage"] >= rows[0]["overlap_bound"] >= 1.0


def _metered_run(toy, placed_executors):
    from omni_cli.bench.crossing import metered
    from omni_cli.engine import Engine
    from omni_cli.spec import SpeakRequest

    remote = {name: getattr(ex, "kind", "inline") in ("process", "ray") for name, ex in placed_executors.items()}
    wrapped, crossings = metered(toy, placed_executors, remote)
    engine = Engine(toy, executors=wrapped)
    handles = [engine.submit(SpeakRequest("Hello there, world", seed=seed), collect=True) for seed in (1, 2)]
    for _ in engine.events():
        pass
    results = [h.result() for h in handles]
    spoken = [c for c in crossings if c.component not in ("audio_encoder", "image_encoder")]  # nor see
    assert spoken and all(c.work_units > 0 for c in spoken) and all(r.samples.size > 0 for r in results)
    return {c.component: c for c in crossings}, results


def test_a_metered_run_counts_what_crosses_the_driver(toy, executors):
    from omni_cli.bench.crossing import totals
    from omni_cli.engine.executors import close_executors, make_executors

    by, _ = _metered_run(toy, executors("thread"))
    assert totals(list(by.values()))["driver_bytes_per_unit"] == 0  # a thread shares the driver's memory
    d_model = toy.card.components["thinker"].params["d_model"]
    talker = toy.components["talker"]
    # the hand-off through the driver (the thinker in a process, the talker inline): each thinker token's
    # hidden state and input embedding (float32) come back, and the talker's conditioning made from them
    # goes out again (a thinker reply vector a step)
    through = make_executors(toy, placed(toy, "thinker=process,vocoder=process"))
    try:
        via, via_results = _metered_run(toy, through)
    finally:
        close_executors(through)
    assert via["thinker"].hidden_back_bytes >= 2 * d_model * 4 * via["thinker"].work_units
    # thinker and talker in processes: the states go down the pipe between their workers, the driver sees
    # handles, and the talker's conditioning is made in its worker
    by, results = _metered_run(toy, executors("process"))
    assert [r.tokens for r in results] == [r.tokens for r in via_results]
    assert all(np.array_equal(a.samples, b.samples) for a, b in zip(results, via_results, strict=True))
    assert by["thinker"].hidden_back_bytes < d_model * 4 * by["thinker"].work_units  # under one array a step
    assert by["talker"].conditioning_out_bytes < d_model * 4 * by["talker"].work_units
    units = sum(c.work_units for c in by.values())
    handoff = by["thinker"].hidden_back_bytes + by["talker"].conditioning_out_bytes
    assert totals(list(by.values()))["handoff_bytes_per_unit"] == handoff / units
    # the talker sends back its logits alone: its own states feed nobody (the vocoder reads codes)
    assert by["talker"].hidden_back_bytes == 0
    assert by["talker"].received_bytes < (talker.vocab_size + talker.params.d_model) * 4 * by["talker"].work_units
    samples = sum(r.samples.size for r in results)
    assert by["vocoder"].received_bytes >= 4 * samples > 0  # the audio itself, float32
    assert by["vocoder"].hidden_back_bytes == by["vocoder"].conditioning_out_bytes == 0
    # every pair the talker's worker was sent is dropped once its request ended
    assert executors("process")["talker"].live_states() == 0
