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
        return self.choose_many([logits], [rng], [history], [allow_eos])[0]

    def choose_many(self, logits: Sequence[np.ndarray], rngs: Sequence[np.random.Generator],
                    histories: Sequence[Sequence[int]], allow_eos: Sequence[bool]) -> list[int]:
        """One token per row. Every step is row-wise, so a row's token does not depend on its batch-mates."""
        p = self.params
        penalty = p.repetition_penalty
        if len(logits) == 1:  # the common case at low concurrency: no stacking, one mask
            scores = apply_repetition_penalty(np.asarray(logits[0], dtype=np.float32), histories[0], penalty)[None]
            masks = self._mask(scores.shape[1], allow_eos[0])
        else:
            scores = np.stack([apply_repetition_penalty(np.asarray(x, dtype=np.float32), h, penalty)
                               for x, h in zip(logits, histories, strict=True)])
            size = scores.shape[1]
            masks = (self._mask(size, allow_eos[0]) if len(set(allow_eos)) == 1
                     else np.stack([self._mask(size, a) for a in allow_eos]))
        if p.temperature == 0.0:
            return np.argmax(scores + masks, axis=1).tolist()  # first maximum, as torch.argmax
        z = scores * (1.0 / p.temperature) + masks  # float64: the masks are; a fresh array, changed in place
        size = z.shape[1]
        if 0 < p.top_k < size:
            kth = np.partition(z, -p.top_k, axis=1)[:, -p.top_k:-p.top_k + 1 or None]
            z[z < kth] = -np.inf
        z -= z.max(axis=1, keepdims=True)
        probs = np.exp(z, out=z)
        if p.top_p < 1.0:
            for row in probs:
                row /= row.sum()
                order = np.argsort(-row, kind="stable")
                # keep the smallest prefix whose mass reaches top_p (always at least one token)
                cut = int(np.searchsorted(np.cumsum(row[order]), p.top_p)) + 1
                row[order[cut:]] = 0.0
        cumulative = np.cumsum(probs, axis=1)
        # scaling by each row's total keeps u below it, so the chosen bin always has mass; the token is
        # the number of bins whose cumulative mass is <= u (a cumulative sum never decreases)
        if len(rngs) == 1:
            return [int(np.searchsorted(cumulative[0], rngs[0].random() * cumulative[0, -1], side="right"))]
        u = np.array([rng.random() for rng in rngs]) * cumulative[:, -1]
        return np.sum(cumulative <= u[:, None], axis=1).tolist()
