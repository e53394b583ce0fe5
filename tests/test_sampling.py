"""Our token choice: a row's token never depends on its batch-mates, and the filters do what they say."""

from __future__ import annotations

import numpy as np
import pytest

from omni_cli.loops.sampling import Sampler, apply_repetition_penalty, model_logprob, penalize_rows
from omni_cli.spec.card import SamplingSpec

SPECS = [
    SamplingSpec(temperature=0.0),
    SamplingSpec(temperature=0.0, repetition_penalty=1.3),
    SamplingSpec(temperature=0.9, top_k=8),
    SamplingSpec(temperature=1.2, top_k=20, top_p=0.7, repetition_penalty=1.05),
]
VOCAB, SUPPRESSED, EOS = 40, 3, 39


def rows(n: int) -> list[np.ndarray]:
    return [np.random.default_rng(100 + i).standard_normal(VOCAB).astype(np.float32) * 3 for i in range(n)]


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: f"t{s.temperature}-k{s.top_k}-p{s.top_p}-r{s.repetition_penalty}")
def test_a_batch_chooses_what_each_row_chooses_alone(spec):
    sampler = Sampler(spec, [SUPPRESSED], [EOS])
    logits, histories = rows(6), [list(range(i, i + 5)) for i in range(6)]
    allow = [True, False, True, True, False, True]
    batch_rngs = [np.random.default_rng(i) for i in range(6)]
    alone_rngs = [np.random.default_rng(i) for i in range(6)]
    for _ in range(50):
        together = sampler.choose_many(logits, batch_rngs, histories, allow)
        alone = [sampler.choose(x, g, h, a) for x, g, h, a in zip(logits, alone_rngs, histories, allow, strict=True)]
        assert together == alone


def test_the_batch_penalty_is_each_rows_own_bit_for_bit():
    rng = np.random.default_rng(7)
    logits = (rng.standard_normal((5, VOCAB)) * 4).astype(np.float32)  # both signs
    # repeats, ids past the vocabulary and below zero (ignored), and a row with no history
    histories = [[1, 1, 2, 39], [], [0, 50, -1, 7, 7, 7], list(range(VOCAB)), [5]]
    batch = logits.copy()
    penalize_rows(batch, histories, 1.3)
    for row, history in enumerate(histories):
        assert np.array_equal(batch[row], apply_repetition_penalty(logits[row], history, 1.3))
    assert not np.array_equal(batch[0], logits[0]) and np.array_equal(batch[1], logits[1])


def test_filters_keep_only_what_they_allow():
    x = rows(1)[0]
    x[SUPPRESSED] = x[EOS] = 100.0  # would always win if not masked
    rng = np.random.default_rng(0)
    top = set(np.argsort(-x)[:8].tolist()) - {SUPPRESSED, EOS}
    greedy = Sampler(SamplingSpec(temperature=0.0), [SUPPRESSED], [EOS])
    assert greedy.choose(x, rng, [], allow_eos=True) == EOS
    assert greedy.choose(x, rng, [], allow_eos=False) == int(np.argsort(-x)[2])
    top_k = Sampler(SamplingSpec(temperature=1.0, top_k=6), [SUPPRESSED], [EOS])
    drawn = {top_k.choose(x, rng, [], allow_eos=False) for _ in range(400)}
    assert drawn <= top and len(drawn) > 1  # sampled, and only from the six best allowed tokens


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: f"t{s.temperature}-k{s.top_k}-p{s.top_p}-r{s.repetition_penalty}")
def test_a_rows_logprob_and_entropy_do_not_depend_on_its_batch_mates(spec):
    """Rollouts record from the batch's arrays; re-scoring rebuilds one row alone: the bits must agree."""
    sampler = Sampler(spec, [SUPPRESSED], [EOS])
    logits, histories = rows(6), [list(range(i, i + 5)) for i in range(6)]
    allow = [True, False, True, True, False, True]
    together = sampler.distribution(logits, histories, allow)
    for i in range(6):
        alone = sampler.distribution([logits[i]], [histories[i]], [allow[i]])
        for token in range(VOCAB):
            assert np.array(together.behaviour(i, token)).tobytes() == np.array(alone.behaviour(0, token)).tobytes()


def test_logprobs_are_those_of_the_filtered_tempered_softmax():
    x = rows(1)[0].astype(np.float64)
    sampler = Sampler(SamplingSpec(temperature=0.7, top_k=5), [SUPPRESSED], [EOS])
    drawn = sampler.distribution([x.astype(np.float32)], [[]], [False])
    allowed = [t for t in np.argsort(-x) if t not in (SUPPRESSED, EOS)][:5]  # the five best allowed tokens
    expected = np.full(VOCAB, -np.inf)
    z = (x[allowed].astype(np.float32) * np.float32(1 / 0.7)).astype(np.float64)  # the sampler tempers in float32
    expected[allowed] = z - z.max() - np.log(np.exp(z - z.max()).sum())
    got = np.array([drawn.behaviour(0, t)[0] for t in range(VOCAB)])
    assert np.array_equal(np.isinf(got), np.isinf(expected))
    assert np.allclose(got[allowed], expected[allowed], rtol=0, atol=1e-12)
    p = np.exp(expected[allowed])
    assert drawn.behaviour(0, allowed[0])[1] == pytest.approx(-(p * np.log(p)).sum(), abs=1e-12)


def test_a_greedy_step_has_all_the_mass_and_its_model_probability_is_the_max():
    x = rows(1)[0]
    x[SUPPRESSED] = x[EOS] = -100.0  # the argmax is an allowed token: greedy takes the raw maximum
    greedy = Sampler(SamplingSpec(temperature=0.0), [SUPPRESSED], [EOS])
    drawn = greedy.distribution([x], [[]], [True])
    (token,) = greedy.draw(drawn, [np.random.default_rng(0)])
    assert drawn.behaviour(0, token) == (0.0, 0.0)  # exp(0) = 1: all the mass
    assert drawn.behaviour(0, (token + 1) % VOCAB)[0] == -np.inf
    softmax = np.exp(x.astype(np.float64) - x.max()) / np.exp(x.astype(np.float64) - x.max()).sum()
    assert np.exp(model_logprob(x, token)) == pytest.approx(softmax.max(), rel=1e-12)
    assert token == int(np.argmax(softmax))
