"""Choosing the next token from logits: greedy or seeded sampling, ours rather than a backend's."""

from __future__ import annotations

from collections.abc import Collection, Sequence

import numpy as np

from ..spec.card import SamplingSpec


def apply_repetition_penalty(logits: np.ndarray, history: Sequence[int], penalty: float) -> np.ndarray:
    """As Hugging Face does: each seen token's score is divided by `penalty` if positive, else multiplied."""
    if penalty == 1.0 or not history:
        return logits
    seen = np.unique(np.asarray(history, dtype=np.int64))
    seen = seen[(seen >= 0) & (seen < logits.shape[0])]
    out = logits.copy()
    scores = out[seen]
    out[seen] = np.where(scores < 0, scores * np.float32(penalty), scores / np.float32(penalty))
    return out


class Sampler:
    """One loop's token choice: its sampling settings and the ids it never (or not yet) picks."""

    def __init__(self, params: SamplingSpec, suppressed: Collection[int], eos: Collection[int]):
        self.params = params
        self.suppressed = sorted(suppressed)
        self.suppressed_and_eos = sorted(set(suppressed) | set(eos))
        self._masks: dict[tuple[int, bool], np.ndarray] = {}  # additive: 0 or -inf, per vocab size

    def _mask(self, size: int, allow_eos: bool) -> np.ndarray:
        key = (size, allow_eos)
        if key not in self._masks:
            mask = np.zeros(size, np.float64)
            banned = [t for t in (self.suppressed if allow_eos else self.suppressed_and_eos) if t < size]
            mask[banned] = -np.inf
            self._masks[key] = mask
        return self._masks[key]

    def choose(self, logits: np.ndarray, rng: np.random.Generator, history: Sequence[int], allow_eos: bool) -> int:
        p = self.params
        scores = apply_repetition_penalty(np.asarray(logits, dtype=np.float32), history, p.repetition_penalty)
        mask = self._mask(scores.shape[0], allow_eos)
        if p.temperature == 0.0:
            return int(np.argmax(scores + mask))  # first maximum, as torch.argmax
        z = scores * (1.0 / p.temperature) + mask  # float64: the mask is
        if 0 < p.top_k < z.shape[0]:
            z[z < np.partition(z, -p.top_k)[-p.top_k]] = -np.inf
        probs = np.exp(z - z.max())
        if p.top_p < 1.0:
            probs /= probs.sum()
            order = np.argsort(-probs, kind="stable")
            # keep the smallest prefix whose mass reaches top_p (always at least one token)
            cut = int(np.searchsorted(np.cumsum(probs[order]), p.top_p)) + 1
            probs[order[cut:]] = 0.0
        cumulative = np.cumsum(probs)
        # scaling by the total keeps u below it, so the chosen bin always has mass
        return int(np.searchsorted(cumulative, rng.random() * cumulative[-1], side="right"))
