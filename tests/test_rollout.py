"""The rollout profile on the toy card: it changes no output, and its log-probabilities re-score exactly."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from runtime_helpers import run_alone, run_together

from omni_cli.api import load
from omni_cli.engine import Engine
from omni_cli.rollout import Sample, behaviour, compare, load_run, parse_prompts, rollout, score
from omni_cli.spec import SpeakRequest, SpecError

TEXTS = ["Hello there, world.", "Good morning!"]


def requests(profile: str) -> list[SpeakRequest]:
    return [SpeakRequest(TEXTS[0], seed=3, profile=profile),
            SpeakRequest(TEXTS[1], seed=4, mode="chat", max_tokens=12, voice="tenor", profile=profile)]


def test_rollout_changes_no_token_and_no_sample(toy):
    _, served = run_together(toy, requests("serve"))
    _, rolled = run_together(toy, requests("rollout"))
    for s, r in zip(served, rolled, strict=True):
        assert behaviour(s) == {} and set(behaviour(r)) == {"thinker_decode", "talker_decode", "vocoder"}
        assert sum(map(len, s.tokens.values())) > 20 and s.samples.size > 0  # an empty run is no parity
        assert s.tokens == r.tokens and np.array_equal(s.samples, r.samples)
        for loop, tokens in r.tokens.items():
            assert behaviour(r)[loop]["token"].tolist() == tokens
        chunks = behaviour(r)["vocoder"]
        assert chunks["num_samples"].sum() == r.samples.size
        assert chunks["start_code"][0] == 0 and (chunks["start_code"][1:] == chunks["end_code"][:-1]).all()
        # the toy vocoder reads one row of its noise table per code, in order
        assert (chunks["noise_start"] == chunks["start_code"]).all() and (chunks["noise_stop"] == chunks["end_code"]).all()


@pytest.mark.parametrize("concurrency", [1, 4], ids=["alone", "batched"])
def test_recorded_equals_rescored_bit_for_bit(toy, tmp_path, concurrency):
    prompts = parse_prompts([TEXTS[0], '{"text": "Good morning!", "mode": "chat", "max_tokens": 10}'])
    rollout(Engine(toy), prompts, 2, tmp_path, seed=11, concurrency=4)
    samples = load_run(tmp_path)
    assert len(samples) == 4
    for sample, rescored in zip(samples, score(Engine(toy), samples, concurrency=concurrency), strict=True):
        agreement = compare(sample, rescored)
        assert agreement.num_steps > 10 and agreement.tokens_equal and agreement.bit_equal, agreement
        sampled = ~sample.loops["talker_decode"]["forced"]
        assert sampled.all() and np.isfinite(sample.loops["talker_decode"]["logprob"]).all()


def test_forced_tokens_carry_the_model_logprob_never_a_sampled_one(toy):
    result = run_alone(toy, SpeakRequest("Hi, you", seed=1, profile="rollout"))
    thinker = behaviour(result)["thinker_decode"]
    assert thinker["forced"].all()  # echo: every reply token is the text's (then the end token)
    assert thinker["token"][:-1].tolist() == list(b"Hi, you")
    assert np.isnan(thinker["logprob"]).all() and np.isnan(thinker["entropy"]).all()
    assert np.isfinite(thinker["logprob_model"]).all() and (thinker["logprob_model"] < 0).all()


def test_greedy_steps_have_all_the_mass(toy):
    result = run_alone(toy, SpeakRequest("Tell me", seed=2, mode="chat", max_tokens=8, profile="rollout"))
    thinker = behaviour(result)["thinker_decode"]  # the toy thinker decodes greedily in chat
    assert not thinker["forced"].any() and len(thinker["token"]) == 8
    assert (thinker["logprob"] == 0.0).all() and (thinker["entropy"] == 0.0).all()  # exp(0) = 1: the max


def test_k_seeds_give_k_utterances_and_a_seed_gives_the_same_one(toy, tmp_path):
    first, again = tmp_path / "a", tmp_path / "b"
    first.mkdir(), again.mkdir()
    for out in (first, again):
        rollout(Engine(toy), parse_prompts([TEXTS[1]]), 4, out, seed=100, concurrency=3)
    a, b = load_run(first), load_run(again)
    assert [s.meta["request"]["seed"] for s in a] == [100, 101, 102, 103]
    talker = [tuple(s.loops["talker_decode"]["token"].tolist()) for s in a]
    assert len(set(talker)) == 4  # temperature 0.9: four seeds, four utterances
    assert len({s.audio.tobytes() for s in a}) == 4
    for x, y in zip(a, b, strict=True):
        assert x.audio.tobytes() == y.audio.tobytes() and x.audio.size > 0
        for loop in x.loops:
            for name, column in x.loops[loop].items():
                assert column.tobytes() == y.loops[loop][name].tobytes(), (loop, name)
        assert x.path.with_suffix(".wav").read_bytes() == y.path.with_suffix(".wav").read_bytes()


def test_another_card_scores_the_same_tokens_with_its_own_logprobs(toy, tmp_path):
    rollout(Engine(toy), parse_prompts([TEXTS[0]]), 1, tmp_path, seed=5)
    (sample,) = load_run(tmp_path)
    card = Path(toy.card.source).read_text(encoding="utf-8")
    assert f"seed: {toy.card.seed}\n" in card
    other = tmp_path / "new_weights.yaml"  # new weights, same shapes and vocabularies
    other.write_text(card.replace(f"seed: {toy.card.seed}\n", f"seed: {toy.card.seed + 1}\n"), encoding="utf-8")
    (rescored,) = score(Engine(load(str(other))), [sample])
    agreement = compare(sample, rescored)
    assert agreement.tokens_equal and not agreement.bit_equal
    new = rescored["talker_decode"]["logprob_model"]  # the raw model gives every token some mass
    assert np.isfinite(new).all() and not np.array_equal(new, sample.loops["talker_decode"]["logprob_model"])
    # under top-k, a recorded token may be one the new weights would never draw: -inf, not a made-up number
    assert (rescored["talker_decode"]["logprob"] <= 0).all()


def test_the_sample_file_holds_what_a_trainer_needs(toy, tmp_path):
    rollout(Engine(toy), parse_prompts(['{"text": "Hey", "voice": "tenor", "seed": 9}']), 1, tmp_path)
    (sample,) = load_run(tmp_path)
    meta = sample.meta
    assert meta["request"] == {"text": "Hey", "mode": "echo", "voice": "tenor", "seed": 9, "max_tokens": None,
                               "handoff": None, "profile": "rollout", "speed": None, "instructions": None,
                               "images": [], "videos": [], "history": []}
    assert meta["card"]["name"] == toy.card.model and len(meta["card"]["sha256"]) == 64
    assert meta["program"]["name"] == "speak" and len(meta["program"]["sha256"]) == 64
    assert meta["loops"]["talker_decode"]["sampling"]["temperature"] == 0.9
    assert meta["loops"]["vocoder"]["noise_seed"] == 9 and meta["status"] == "finished"
    assert meta["loops"]["vocoder"]["pace"] == "schedule" and "largest_when_slow" not in meta["loops"]["vocoder"]
    assert set(meta["versions"]) >= {"omni_cli", "numpy", "python"}
    assert sample.audio.dtype == np.float32 and sample.audio.size == meta["num_samples"] > 0


def test_a_bad_profile_or_replay_is_a_request_error(toy):
    engine = Engine(toy)
    with pytest.raises(SpecError, match="unknown profile"):
        engine.submit(SpeakRequest("Hi", profile="train"))
    with pytest.raises(SpecError, match="replay needs the rollout profile"):
        engine.submit(SpeakRequest("Hi", replay={"thinker_decode": [1]}))
    with pytest.raises(SpecError, match="no recorded tokens for loop 'talker_decode'"):
        engine.submit(SpeakRequest("Hi", profile="rollout", replay={"thinker_decode": [72, 105, 257]}))


def test_a_bad_prompt_stops_the_run_before_any_file(toy, tmp_path):
    with pytest.raises(SpecError, match="unknown voice"):
        rollout(Engine(toy), parse_prompts(["Fine", '{"text": "Hi", "voice": "bass"}']), 2, tmp_path)
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(ValueError, match=r"<prompts>:2: unknown field\(s\) speed"):
        parse_prompts(["Fine", '{"text": "Hi", "speed": 2}'])
    with pytest.raises(ValueError, match="<prompts>:1: max_tokens must be an integer"):
        parse_prompts(['{"text": "Hi", "max_tokens": "8"}'])


def test_a_sample_that_is_not_one_is_named(tmp_path):
    (tmp_path / "x.npz").write_bytes(b"not a zip")
    with pytest.raises(ValueError, match="x.npz: not a rollout sample"):
        load_run(tmp_path)
    assert Sample({}, {}).tokens == {}


def test_the_bench_measures_recording_on_the_same_audio(toy):
    from omni_cli.bench import recording_cost

    rows = recording_cost(toy, num_requests=2, short_chars=12, concurrency=2, repeats=1)
    assert [r["concurrency"] for r in rows] == [1, 2] and all(r["work_units"] > 20 for r in rows)
    for r in rows:  # a difference of two measured figures: its sign is the machine's, not ours
        assert r["recording_us_per_unit"] == r["rollout_us_per_unit"] - r["serve_us_per_unit"]


def test_a_failed_sample_keeps_what_it_recorded_and_says_so(tmp_path, monkeypatch):
    program = load("qwen2_5_omni_toy")  # its own components: one of them is made to fail
    vocoder, calls = program.components["vocoder"], []
    run = vocoder.run

    def third_call_fails(kind, inputs):
        calls.append(kind)
        if len(calls) == 3:
            raise RuntimeError("boom")
        return run(kind, inputs)

    monkeypatch.setattr(vocoder, "run", third_call_fails)
    infos = rollout(Engine(program), parse_prompts([TEXTS[0]]), 2, tmp_path, concurrency=1)
    assert sorted(i.status for i in infos) == ["failed", "finished"]
    failed, finished = sorted(load_run(tmp_path), key=lambda s: s.meta["status"])
    assert failed.meta["error"] == "vocoder: boom" and len(failed.loops["vocoder"]["start_code"]) == 2
    assert failed.audio.size == failed.loops["vocoder"]["num_samples"].sum() > 0
    monkeypatch.setattr(vocoder, "run", run)
    for sample, rescored in zip([failed, finished], score(Engine(program), [failed, finished]), strict=True):
        assert compare(sample, rescored).bit_equal  # what a failed sample recorded re-scores too


def test_a_rollout_with_components_on_threads_records_what_inline_records(toy, tmp_path):
    from omni_cli.engine.executors import close_executors, make_executors, placement_of
    from omni_cli.spec.placement import override_placement

    threads = make_executors(toy, placement_of(toy, override_placement(toy.card.placement, "thread",
                                                                       list(toy.components))))
    (tmp_path / "thread").mkdir(), (tmp_path / "inline").mkdir()
    try:
        rollout(Engine(toy, executors=threads), parse_prompts(TEXTS), 2, tmp_path / "thread", seed=1, concurrency=4)
    finally:
        close_executors(threads)
    rollout(Engine(toy), parse_prompts(TEXTS), 2, tmp_path / "inline", seed=1, concurrency=4)
    for a, b in zip(load_run(tmp_path / "thread"), load_run(tmp_path / "inline"), strict=True):
        assert a.audio.tobytes() == b.audio.tobytes() and a.audio.size > 0
        assert all(a.loops[loop][name].tobytes() == column.tobytes()
                   for loop in b.loops for name, column in b.loops[loop].items())
