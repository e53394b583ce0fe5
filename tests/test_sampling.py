"""Our token choice: a row's token never depends on its batch-mates, and the filters do what they say."""

from __future__ import annotations

import numpy as np
import pytest

from omni_cli.loops.sampling import Sampler
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
