"""What `omni bench` computes from a run: each figure from measurements whose answer is known by hand."""

from __future__ import annotations

import hashlib
import random

import pytest

from omni_cli.api import load
from omni_cli.bench import BenchResult, PlaybackClock, Workload, run_workload, targets
from omni_cli.bench.targets import across_rounds
from omni_cli.bench.workload import FirstChunkPath, RunTrace
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


@pytest.mark.parametrize("kind", [FirstChunkPath, RunTrace])  # RunTrace adds busy seconds to the same sum (one subscriber)
def test_first_chunk_path_sums_a_requests_own_units_up_to_its_first_audio_chunk(kind):
    path = kind()

    def unit(rid, kind, dur_s):
        return WorkUnitEvent(rid, "loop", kind, 0, 1, 0.0, dur_s, 0)

    for event in [unit("a", "ar_prefill", 0.1), unit("b", "ar_prefill", 0.5), unit("a", "ar_token", 0.05),
                  RequestEvent("a", "admitted", 0.0), unit("a", "audio_chunk", 0.2),
                  unit("a", "ar_token", 0.07), unit("a", "audio_chunk", 0.3)]:  # after a's first chunk: not on it
        path.on_event(event)
    assert path.path_s == pytest.approx({"a": 0.35, "b": 0.5})
    if kind is RunTrace:  # and each loop's busy seconds, every unit counted (the batch size is 1 here)
        assert path.busy_s == pytest.approx({"loop": 0.1 + 0.5 + 0.05 + 0.2 + 0.07 + 0.3})


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


@pytest.mark.parametrize("placement", ["card", "vocoder=thread", "inline"])
def test_run_workload_runs_components_where_the_card_or_the_workload_places_them(tmp_path, placement):
    """The bench ran every component inline whatever the card said (issue 19: a process placement was
    'measured' that never ran): the card's placement counts unless the workload names one."""
    import threading
    from pathlib import Path

    toy = (Path(__file__).resolve().parents[1] / "cards" / "qwen2_5_omni_toy.yaml").read_text(encoding="utf-8")
    card = tmp_path / "placed.yaml"
    card.write_text(toy + "\nplacement:\n  vocoder: {executor: thread}\n", encoding="utf-8")
    program = load(str(card))
    vocoder, seen = program.roles["vocoder"], set()
    run = vocoder.run

    def recorded(kind, inputs):
        seen.add(threading.current_thread() is threading.main_thread())
        return run(kind, inputs)

    vocoder.run = recorded
    result = run_workload(program, Workload(num_requests=2, text_chars=20, concurrency=2, placement=placement))
    assert len(result.audio_s) == 2 and all(a > 0 for a in result.audio_s)
    assert seen == ({True} if placement == "inline" else {False})  # on the engine's thread only when inline


@pytest.mark.parametrize("placement", ["inline", "vocoder=thread"])
def test_a_warm_up_runs_on_the_timed_runs_own_engine_and_workers_and_counts_nowhere(placement, monkeypatch):
    """A placement's workers start with each run: the untimed utterance must run on them, not on others
    that end before the timed run begins (stop 34's bench warmed only the engine's own process)."""
    from omni_cli.bench.workload import starts_executors
    from omni_cli.engine import Engine

    program = load("qwen2_5_omni_toy")
    workload = Workload(num_requests=2, text_chars=20, concurrency=2, placement=placement)
    submitted, heard = [], []
    submit = Engine.submit

    def recorded(self, request, **kwargs):
        submitted.append((id(self), request.request_id))
        return submit(self, request, **kwargs)

    monkeypatch.setattr(Engine, "submit", recorded)
    warm = run_workload(program, workload, keep_outputs=True, warm_up=True, on_event=heard.append)
    engines = {engine for engine, _ in submitted}
    assert len(engines) == 1 and [rid for _, rid in submitted] == ["warm-up", "b0", "b1"]  # one engine, warm-up first
    assert heard and all(event.request_id != "warm-up" for event in heard)  # the study hears the timed run only
    submitted.clear()
    cold = run_workload(program, workload, keep_outputs=True)
    assert [rid for _, rid in submitted] == ["b0", "b1"]
    # the timed run counts its own WorkUnits only and makes the same audio
    assert warm.work_units == cold.work_units and warm.digests == cold.digests
    assert starts_executors(program, workload) is (placement != "inline")


def test_reset_stats_counts_afresh_from_what_is_reserved_now():
    from omni_cli.engine import Engine
    from omni_cli.spec import SpeakRequest

    engine = Engine(load("qwen2_5_omni_toy"))
    engine.submit(SpeakRequest("Hello there.", request_id="a"))
    for _ in engine.events():
        pass
    assert engine.stats.work_units > 0 and engine.budget.peak_reserved > 0 == engine.budget.reserved
    engine.reset_stats()
    assert engine.stats.work_units == engine.stats.ticks == 0 and engine.budget.peak_reserved == 0


def _result(label: str, *, ttfa: list[float], latency: list[float], audio: list[float], wall: float,
            stall: list[float] | None = None) -> BenchResult:
    return BenchResult(label, Workload(num_requests=len(latency)), wall, ttfa_s=ttfa, latency_s=latency, audio_s=audio,
                       stall_s=stall or [])


def _reference_run(rng: random.Random, *, ttfa_gain: float, latency_ratio: float, c1_stall: float,
                   c8_stall: float, c8_rtf: float, throughput: float, same: tuple[int, int]):
    """A made-up reference run (ours-1, ours-8, generate) whose ratios are the given ones."""
    n = 8
    audio = [rng.uniform(3.0, 5.0) for _ in range(n)]
    gen_latency = [rng.uniform(1.0, 2.0) for _ in range(n)]
    generate = _result("generate", ttfa=gen_latency, latency=gen_latency, audio=audio, wall=sum(gen_latency))
    g = generate.summary()
    one = _result("ours-1", ttfa=[g["ttfa_p50_s"] / ttfa_gain] * n,
                  latency=[g["latency_p50_s"] * latency_ratio] * n, audio=audio, wall=sum(gen_latency),
                  stall=[c1_stall * rng.random() for _ in range(n - 1)] + [c1_stall])
    many = _result("ours-8", ttfa=[0.5] * n, latency=[a * c8_rtf for a in audio], audio=audio,
                   wall=sum(audio) / (throughput * g["audio_s_per_wall_s"]), stall=[0.0] * (n - 1) + [c8_stall])
    outputs = {"requests": n, "ours-1": {"same_tokens": same[0], "min_snr_db": rng.uniform(100, 130)},
               "ours-8": {"same_tokens": same[1], "min_snr_db": rng.uniform(100, 130)}}
    return [one, many, generate], outputs


def _by_target(rows: list[dict]) -> dict[str, dict]:
    return {row["target"]: row for row in rows}


@pytest.mark.parametrize("seed", range(4))
def test_reference_targets_are_issue_19s_ratios_of_the_run(seed):
    rng = random.Random(seed)
    gain, ratio, thr = rng.uniform(2, 20), rng.uniform(0.8, 1.3), rng.uniform(1, 5)
    stall1 = rng.choice([0.0, rng.uniform(0.01, 0.5)])
    results, outputs = _reference_run(rng, ttfa_gain=gain, latency_ratio=ratio, c1_stall=stall1, c8_stall=0.0,
                                      c8_rtf=rng.uniform(0.2, 0.9), throughput=thr, same=(8, rng.randint(6, 8)))
    rows = _by_target(targets([], (results, outputs), {}))
    s = {r.label: r.summary() for r in results}
    ttfa = rows["TTFA p50, generate / ours (chat, greedy, concurrency 1)"]
    assert ttfa["value"] == pytest.approx(s["generate"]["ttfa_p50_s"] / s["ours-1"]["ttfa_p50_s"])
    assert ttfa["value"] == pytest.approx(gain) and ttfa["met"] == (gain >= 10) and ttfa["goal"] == ">= 10x"
    latency = rows["latency p50, ours / generate (concurrency 1)"]
    assert latency["value"] == pytest.approx(s["ours-1"]["latency_p50_s"] / s["generate"]["latency_p50_s"])
    assert latency["value"] == pytest.approx(ratio) and latency["met"] == (ratio <= 1.05)
    stall = rows["stall max, player starting at first audio (ours-1)"]
    assert stall["value"] == max(results[0].stall_s) == stall1 and stall["met"] == (stall1 == 0)
    many = rows["stall max, player starting at first audio (ours-8)"]
    assert many["value"] == 0.0 and many["met"] is True  # faster than real time (RTF < 1): judged
    assert f"{s['ours-8']['rtf_p50']:.2f}" in many["goal"]
    throughput = rows["audio s per wall s, ours-8 / generate one by one"]
    assert throughput["value"] == pytest.approx(s["ours-8"]["audio_s_per_wall_s"] / s["generate"]["audio_s_per_wall_s"])
    assert throughput["value"] == pytest.approx(thr) and throughput["met"] == (thr >= 3)
    for label in ("ours-1", "ours-8"):
        same = rows[f"requests whose tokens and codes equal generate's ({label})"]
        assert same["value"] == outputs[label]["same_tokens"] and same["goal"] == "8 of 8"
        assert same["met"] == (outputs[label]["same_tokens"] == 8)


def test_reference_targets_met_on_each_side_of_their_bounds():
    """Just inside and just outside each bound: the verdict flips where issue 19 puts it."""
    rng = random.Random(7)
    for inside in (True, False):
        nudge = 1.01 if inside else 0.99
        results, outputs = _reference_run(rng, ttfa_gain=10 * nudge, latency_ratio=1.05 / nudge,
                                          c1_stall=0.0 if inside else 0.001, c8_stall=0.0 if inside else 0.2,
                                          c8_rtf=0.5, throughput=3 * nudge, same=(8, 8) if inside else (7, 8))
        rows = targets([], (results, outputs), {})
        verdicts = [row["met"] for row in rows if row["met"] is not None]
        assert verdicts[:-1] == [inside] * (len(verdicts) - 1) and verdicts[-1] is True  # ours-8's 8 of 8


def test_a_reference_run_at_concurrency_1_judges_the_concurrency_1_targets_alone():
    """`--reference --concurrency 1` runs no ours-N: its targets are the concurrency-1 ones (it was a StopIteration)."""
    results, outputs = _reference_run(random.Random(5), ttfa_gain=12, latency_ratio=1.0, c1_stall=0.0,
                                      c8_stall=0.0, c8_rtf=0.5, throughput=3.5, same=(8, 8))
    del outputs["ours-8"]
    rows = _by_target(targets([], ([r for r in results if r.label != "ours-8"], outputs), {}))
    assert not any("ours-8" in target for target in rows)
    assert rows["TTFA p50, generate / ours (chat, greedy, concurrency 1)"]["met"] is True
    assert rows["requests whose tokens and codes equal generate's (ours-1)"]["value"] == 8


def test_a_stall_at_concurrency_n_is_not_judged_while_audio_is_made_slower_than_real_time():
    results, outputs = _reference_run(random.Random(3), ttfa_gain=12, latency_ratio=1.0, c1_stall=0.0,
                                      c8_stall=2.5, c8_rtf=1.8, throughput=1.5, same=(8, 8))
    row = _by_target(targets([], (results, outputs), {}))["stall max, player starting at first audio (ours-8)"]
    assert row["value"] == 2.5 and row["met"] is None and "1.80" in row["goal"]


def test_several_rounds_give_each_target_its_median_round_its_range_and_the_rounds_that_met_it():
    rng = random.Random(11)
    gains, throughputs, rtfs = [9.0, 12.0, 10.5, 8.0], [3.2, 2.8, 3.6, 3.1], [0.8, 1.2, 0.9, 0.7]
    rounds = [targets([], _reference_run(rng, ttfa_gain=g, latency_ratio=0.8, c1_stall=0.0, c8_stall=0.0,
                                         c8_rtf=rtf, throughput=t, same=(8, 8)), {})
              for g, t, rtf in zip(gains, throughputs, rtfs, strict=True)]
    rows = _by_target(across_rounds(rounds))
    assert [row["target"] for row in across_rounds(rounds)] == [row["target"] for row in rounds[0]]
    ttfa = rows["TTFA p50, generate / ours (chat, greedy, concurrency 1)"]
    # four rounds: the lower middle one (9.0x), a figure one round measured, then the lowest and highest
    assert ttfa["value"] == pytest.approx(9.0) and ttfa["measured"] == "9.0x (8.0x to 12.0x)"
    assert (ttfa["met"], ttfa["met_rounds"], ttfa["judged_rounds"]) == (False, 2, 4) and ttfa["goal"] == ">= 10x"
    throughput = rows["audio s per wall s, ours-8 / generate one by one"]
    assert throughput["measured"] == "3.1x (2.8x to 3.6x)" and (throughput["met_rounds"], throughput["judged_rounds"]) == (3, 4)
    # judged only in the rounds made faster than real time; each round's goal named its own RTF
    stall = rows["stall max, player starting at first audio (ours-8)"]
    assert (stall["met"], stall["met_rounds"], stall["judged_rounds"]) == (True, 3, 3)
    assert stall["goal"] == "0 s once RTF p50 < 1 (in each round)" and stall["measured"] == "0.000 s"
    same = rows["requests whose tokens and codes equal generate's (ours-8)"]
    assert (same["met"], same["measured"], same["met_rounds"]) == (True, "8", 4)
    with pytest.raises(ValueError, match="disagree"):
        across_rounds([rounds[0], list(reversed(rounds[1]))])


def test_one_round_is_its_own_figures():
    rows = targets([], _reference_run(random.Random(2), ttfa_gain=11, latency_ratio=0.9, c1_stall=0.0, c8_stall=0.0,
                                      c8_rtf=0.5, throughput=3.3, same=(8, 8)), {})
    assert [{k: v for k, v in row.items() if k not in ("met_rounds", "judged_rounds")} for row in across_rounds([rows])] \
        == rows
