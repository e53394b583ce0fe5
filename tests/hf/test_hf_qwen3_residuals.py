"""Qwen3-Omni's residual codebooks sampled (tiny checkpoint): the request's seed reproduces every codebook group,
batched equals serial bit for bit, the rollout records each group's log-probabilities and re-scoring reproduces
them, through the library and through `omni rollout` / `omni rollout score` with the talker in a worker process.
(Greedy residuals equal generate's: tests/hf/test_hf_qwen3_card.py.)"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
from hf_cards import qwen3_card  # noqa: E402

from omni_cli.api import load  # noqa: E402
from omni_cli.engine import Engine  # noqa: E402
from omni_cli.rollout import compare, load_run, parse_prompts, rollout, score  # noqa: E402
from omni_cli.rollout.records import behaviour  # noqa: E402
from omni_cli.spec.request import SpeakRequest  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
TOLERANCE = 1e-5  # a batched forward rounds differently from one request alone (~1e-7 in the logits)
TEXTS = ("hello there", "a longer question than the first one?", "ok")


def short_card(directory: Path, name: str, residual_sampling: dict | None = None) -> Path:
    """The shipped card's sampling (talker and residuals), short utterances, one whole Code2Wav chunk."""
    return qwen3_card(directory, name, talker_max=30, greedy=False, chunk_codes=0, residual_sampling=residual_sampling)


@pytest.fixture(scope="module")
def cards(tmp_path_factory):
    return tmp_path_factory.mktemp("qwen3_residual_cards")


@pytest.fixture(scope="module")
def program(cards, qwen3_checkpoint):
    return load(str(short_card(cards, "sampled")), settings={"model_path": str(qwen3_checkpoint)})


def frames_of(program, seeds, profile="rollout", texts=TEXTS):
    """Each request's results (its rollout record holds its residual codes), all requests in one engine."""
    engine = Engine(program)
    handles = [engine.submit(SpeakRequest(texts[i % len(texts)], mode="chat", seed=s, profile=profile), collect=True)
               for i, s in enumerate(seeds)]
    results = [h.result() for h in handles]
    assert all(r.error is None for r in results), [r.error for r in results]
    return results


class ArgmaxSpy:
    """Counts the residual codes a talker step chose that are not the first maximum of their logits."""

    def __init__(self, talker):
        self.talker, self.run, self.codes, self.not_argmax = talker, talker.run, 0, 0
        talker.run = self

    def __call__(self, kind, inputs):
        outputs = self.run(kind, inputs)
        for out in outputs:
            if getattr(out, "residual_logits", None) is not None:
                chosen = np.array(out.extra[1:])
                self.codes += chosen.size
                self.not_argmax += int(np.sum(chosen != out.residual_logits.argmax(axis=1)))
        return outputs

    def close(self):
        del self.talker.run


def test_the_seed_reproduces_every_group_and_batched_equals_serial(program):
    seeds = (11, 12, 13)
    batched = frames_of(program, seeds)
    serial = [frames_of(program, (s,), texts=(t,))[0] for s, t in zip(seeds, TEXTS, strict=True)]
    again = frames_of(program, seeds)
    for b, s, a in zip(batched, serial, again, strict=True):
        rb, rs, ra = (behaviour(x)["talker_decode"] for x in (b, s, a))
        assert len(rb["token"]) > 5
        for column in ("token", "residual_token"):
            assert np.array_equal(rb[column], rs[column]) and np.array_equal(rb[column], ra[column])
        assert b.samples.size > 0 and np.array_equal(b.samples, a.samples)
    codes = [tuple(behaviour(x)["talker_decode"]["residual_token"][0]) for x in batched]
    assert len(set(codes)) > 1  # other seeds, other residuals


def test_the_serve_profile_makes_the_same_audio_as_the_recorded_one(program):
    (served,), (rolled,) = frames_of(program, (5,), profile="serve"), frames_of(program, (5,))
    assert served.tokens == rolled.tokens and np.array_equal(served.samples, rolled.samples)


def test_residuals_are_drawn_unless_the_card_makes_them_greedy(cards, qwen3_checkpoint, program):
    greedy = load(str(short_card(cards, "greedy_residuals", {"temperature": 0.0})),
                  settings={"model_path": str(qwen3_checkpoint)})
    counts = {}
    for name, prog in (("sampled", program), ("greedy", greedy)):
        spy = ArgmaxSpy(prog.components["talker"])
        try:
            frames_of(prog, (1, 2))
        finally:
            spy.close()
        counts[name] = (spy.codes, spy.not_argmax)
    assert counts["sampled"][0] > 30 and counts["sampled"][1] > counts["sampled"][0] // 4
    assert counts["greedy"][0] > 30 and counts["greedy"][1] == 0


def test_rollout_records_each_group_and_rescoring_reproduces_it(program, tmp_path):
    prompts = parse_prompts(["ok then", '{"text": "what now?", "mode": "chat", "voice": "Ethan"}'])
    rollout(Engine(program), prompts, 2, tmp_path, seed=3, concurrency=4)
    samples = load_run(tmp_path)
    groups = program.components["talker"].residual_groups
    for sample in samples:
        talker = sample.loops["talker_decode"]
        steps = len(talker["token"])
        assert talker["residual_token"].shape == talker["residual_logprob"].shape == (steps, groups)
        consumed = talker["residual_token"][:-1]  # every frame but the last (codec EOS or the cap) was consumed
        assert (consumed >= 0).all() and (talker["residual_token"][-1] == -1).all()
        lp = talker["residual_logprob"][:-1]
        assert np.isfinite(lp).all() and (lp <= 0).all() and np.isnan(talker["residual_logprob"][-1]).all()
        assert sample.meta["loops"]["talker_decode"]["residual_sampling"]["top_p"] == 0.8
    for concurrency in (1, 4):
        for sample, rescored in zip(samples, score(Engine(program), samples, concurrency=concurrency), strict=True):
            agreement = compare(sample, rescored)
            assert agreement.num_steps > 10 and agreement.within(TOLERANCE), (concurrency, agreement)
    # the residual columns are compared: one of them off by 1e-3 is outside the tolerance
    sample = samples[0]
    rescored = score(Engine(program), [sample])[0]
    sample.loops["talker_decode"]["residual_logprob"][0, 1] += 1e-3
    assert not compare(sample, rescored).within(TOLERANCE)


def test_omni_rollout_and_score_with_the_talker_in_a_worker_process(cards, qwen3_checkpoint, tmp_path):
    card = short_card(cards, "cli")
    (tmp_path / "p.txt").write_text("hello there\n", encoding="utf-8")
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    omni = [sys.executable, "-m", "omni_cli.cli", "rollout"]
    common = ["--card", str(card), "--model-path", str(qwen3_checkpoint)]
    run = subprocess.run([*omni, "run", "p.txt", "-k", "2", "-o", "out", "-q", "--placement", "talker=process",
                          *common], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300)
    assert run.returncode == 0, run.stderr
    scored = subprocess.run([*omni, "score", "out", *common], capture_output=True, text=True, cwd=tmp_path, env=env,
                            timeout=300)
    assert scored.returncode == 0, scored.stderr
    lines = scored.stdout.splitlines()
    assert len(lines) == 2 and all(" steps  " in line for line in lines), lines
    samples = load_run(tmp_path / "out")
    assert len({tuple(s.loops["talker_decode"]["residual_token"][0]) for s in samples}) == 2
