"""Re-scoring: teacher-force recorded tokens through a card and compute every log-probability again.

Through the card that sampled them, the numbers must equal the recorded ones (bit for bit on the toy
numpy card, within 1e-5 on hf: batched forwards round differently); through another card (new
weights) they are the new policy's log-probabilities of the same tokens, what an importance ratio needs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..engine import Engine
from ..spec import SpeakRequest
from ..spec.stream import RequestStatus
from .records import Sample, behaviour

SCORED = ("logprob", "logprob_model", "entropy",  # the columns scoring recomputes (the residual ones where recorded)
          "residual_logprob", "residual_logprob_model", "residual_entropy")
KEPT = ("token", "forced", "eos_suppressed", "residual_token")  # the columns that must come out the same


def replay_request(sample: Sample, request_id: str | None = None) -> SpeakRequest:
    """The sample's own request, with its recorded tokens to teacher-force."""
    r = sample.meta["request"]
    return SpeakRequest(r["text"], mode=r["mode"], voice=r["voice"], seed=r["seed"], max_tokens=r["max_tokens"],
                        handoff=r["handoff"], request_id=request_id, profile="rollout", replay=sample.tokens)


def score(engine: Engine, samples: Sequence[Sample], *, concurrency: int = 8) -> list[dict[str, dict[str, np.ndarray]]]:
    """Each sample's AR columns, recomputed through `engine`'s card (up to `concurrency` samples batched).

    Raises ValueError naming the sample when a replay fails (a token the card cannot take, say)."""
    results: list[dict[str, dict[str, np.ndarray]] | None] = [None] * len(samples)
    for first in range(0, len(samples), concurrency):
        handles = [(i, engine.submit(replay_request(samples[i]), collect=True))
                   for i in range(first, min(first + concurrency, len(samples)))]
        for i, handle in handles:
            result = handle.result()
            if result.status is not RequestStatus.FINISHED:
                raise ValueError(f"{_name(samples[i])}: re-scoring {result.status.value}: {result.error}")
            results[i] = {loop: cols for loop, cols in behaviour(result).items() if "token" in cols}
    return results  # type: ignore[return-value]


@dataclass(frozen=True)
class Agreement:
    """How re-scored columns compare with the recorded ones, over every step of every loop."""

    num_steps: int
    bit_equal: bool  # every float the same bits, NaN where NaN
    max_abs_diff: float  # over finite values; inf where one side is infinite or NaN and the other not
    tokens_equal: bool

    def within(self, tolerance: float) -> bool:
        return self.tokens_equal and (self.bit_equal or self.max_abs_diff <= tolerance)


def compare(sample: Sample, rescored: dict[str, dict[str, np.ndarray]]) -> Agreement:
    steps, bit_equal, worst, tokens_equal = 0, True, 0.0, True
    for loop, recorded in sample.loops.items():
        if "token" not in recorded:
            continue
        new = rescored.get(loop)
        if new is None or len(new["token"]) != len(recorded["token"]):
            return Agreement(steps, False, math.inf, False)
        steps += len(recorded["token"])
        kept, scored = [c for c in KEPT if c in recorded], [c for c in SCORED if c in recorded]
        if any(c not in new for c in kept + scored):
            return Agreement(steps, False, math.inf, False)
        tokens_equal &= all(np.array_equal(recorded[c], new[c]) for c in kept)
        for column in scored:
            a, b = recorded[column], new[column]
            bit_equal &= a.tobytes() == b.tobytes()
            worst = max(worst, _max_diff(a, b))
    return Agreement(steps, bit_equal, worst, tokens_equal)


def _max_diff(a: np.ndarray, b: np.ndarray) -> float:
    if a.shape != b.shape:
        return math.inf
    same = (a == b) | (np.isnan(a) & np.isnan(b))  # equal infinities and both-NaN agree
    if same.all():
        return 0.0
    diff = np.abs(a[~same] - b[~same])
    return float(np.max(np.where(np.isnan(diff), math.inf, diff)))


def _name(sample: Sample) -> str:
    return sample.path.name if sample.path is not None else f"sample {sample.meta.get('sample_index')}"
