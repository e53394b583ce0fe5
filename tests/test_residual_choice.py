"""ResidualChoice: how a talker step chooses its frame's residual codes, from first principles (no model)."""

from __future__ import annotations

import math
import pickle

import numpy as np

from omni_cli.loops.residuals import ResidualChoice, ResidualRecorder, behaviour, residual_sampler
from omni_cli.spec.card import SamplingSpec

GENERATE = SamplingSpec(temperature=1.0, top_k=50, top_p=0.8)  # the card's default residual_sampling
SAMPLED_TALKER = SamplingSpec(temperature=0.9, top_k=50)


def logits(vocab: int = 64, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=vocab).astype(np.float32)


def choice(**kw) -> ResidualChoice:
    return ResidualChoice(residual_sampler(SAMPLED_TALKER, GENERATE), (5, 1, 1, 3), 3, **kw)


def test_a_greedy_talker_makes_greedy_residuals_and_they_are_the_first_maximum():
    assert residual_sampler(SamplingSpec(temperature=0.0), GENERATE) is None
    assert residual_sampler(SAMPLED_TALKER, SamplingSpec(temperature=0.0)) is None
    row = np.zeros(8, np.float32)
    row[[2, 5]] = 1.0  # a tie: the first wins, as torch.argmax
    greedy = ResidualChoice(None, (0,), 3)
    assert greedy.greedy and greedy.choose(1, row) == 2


def test_the_same_frame_key_draws_the_same_codes_however_often_asked():
    rows = [logits(seed=g) for g in range(3)]
    first = [choice().choose(g + 1, rows[g]) for g in range(3)]
    again = choice()
    assert [again.choose(g + 1, rows[g]) for g in range(3)] == first
    assert [again.choose(g + 1, rows[g]) for g in range(3)] == first  # asked twice (a batch run again alone)
    copied = pickle.loads(pickle.dumps(choice()))  # a placed talker gets a pickled copy
    assert [copied.choose(g + 1, rows[g]) for g in range(3)] == first


def test_other_keys_draw_other_codes_inside_the_filtered_set():
    row = logits(vocab=256)
    codes = {ResidualChoice(residual_sampler(SAMPLED_TALKER, GENERATE), (seed, 1, 1, 3), 1).choose(1, row)
             for seed in range(200)}
    top50 = set(np.argsort(-row)[:50].tolist())
    assert len(codes) > 5 and codes <= top50  # sampled, and never outside generate's top-k


def test_the_draws_follow_the_filtered_distribution():
    row = np.log(np.array([0.5, 0.3, 0.15, 0.05], np.float32))
    sampler = residual_sampler(SAMPLED_TALKER, SamplingSpec(temperature=1.0, top_p=0.8))  # keeps 0.5 + 0.3
    counts = np.bincount([ResidualChoice(sampler, (s,), 1).choose(1, row) for s in range(4000)], minlength=4)
    assert counts[2] == counts[3] == 0
    assert abs(counts[0] / 4000 - 0.5 / 0.8) < 0.03


def test_forced_codes_are_the_recorded_ones():
    assert choice(forced=[7, 8, 9]).choose(2, logits()) == 8


def test_the_recorded_behaviour_is_the_distribution_drawn_from():
    row = np.log(np.array([0.5, 0.3, 0.15, 0.05], np.float32))
    sampler = residual_sampler(SAMPLED_TALKER, SamplingSpec(temperature=1.0, top_p=0.8))
    logprob, model, entropy = behaviour(sampler, row, 1)
    assert math.isclose(logprob, math.log(0.3 / 0.8), rel_tol=1e-6)
    assert math.isclose(model, math.log(0.3), rel_tol=1e-6)
    assert math.isclose(entropy, -(0.625 * math.log(0.625) + 0.375 * math.log(0.375)), rel_tol=1e-6)
    assert behaviour(sampler, row, 3)[0] == -math.inf  # filtered out
    assert behaviour(None, row, 0)[:1] == (0.0,) and behaviour(None, row, 1)[0] == -math.inf  # greedy: a point mass


def test_frames_never_consumed_are_minus_one_and_nan():
    recorder = ResidualRecorder(None, 2)
    recorder.frame(0, [3, 1], np.stack([logits(4, 1), logits(4, 2)]))
    columns = recorder.columns(2)
    assert columns["residual_token"].tolist() == [[3, 1], [-1, -1]]
    assert np.isnan(columns["residual_logprob"][1]).all() and not np.isnan(columns["residual_logprob_model"][0]).any()
