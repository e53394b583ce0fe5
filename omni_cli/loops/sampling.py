"""Choosing the next token from logits: greedy or seeded sampling, ours rather than a backend's."""

from __future__ import annotations

from collections.abc import Collection, Iterable

import numpy as np

from ..spec.card import SamplingSpec


def apply_repetition_penalty(logits: np.ndarray, history: Iterable[int], penalty: float) -> np.ndarray:
    """As Hugging Face does: each seen token's score is divided by `penalty` if positive, else multiplied."""
    if penalty == 1.0:
        return logits
    seen = np.unique(np.fromiter(history, dtype=np.int64))
    seen = seen[(seen >= 0) & (seen < logits.shape[0])]
    if seen.size == 0:
        return logits
    out = logits.copy()
    scores = out[seen]
    out[seen] = np.where(scores < 0, scores * np.float32(penalty), scores / np.float32(penalty))
    return out


def choose_token(
    logits: np.ndarray,
    params: SamplingSpec,
    rng: np.random.Generator,
    history: Iterable[int] = (),
    banned: Collection[int] = (),
) -> int:
    """One token id. `banned` ids (suppressed tokens, EOS before the minimum length) are never chosen."""
    scores = apply_repetition_penalty(np.asarray(logits, dtype=np.float32), history, params.repetition_penalty)
    if banned:
        scores = scores.copy() if scores is logits else scores
        scores[np.fromiter(banned, dtype=np.int64)] = -np.inf
    if params.temperature == 0.0:
        return int(np.argmax(scores))  # first maximum, as torch.argmax
    z = scores.astype(np.float64) / params.temperature
    if 0 < params.top_k < z.shape[0]:
        kth = np.partition(z, -params.top_k)[-params.top_k]
        z = np.where(z < kth, -np.inf, z)
    z = z - np.max(z)
    probs = np.exp(z)
    probs /= probs.sum()
    if params.top_p < 1.0:
        order = np.argsort(-probs, kind="stable")
        cumulative = np.cumsum(probs[order])
        # keep the smallest prefix whose mass reaches top_p (always at least one token)
        cut = int(np.searchsorted(cumulative, params.top_p)) + 1
        keep = np.zeros_like(probs, dtype=bool)
        keep[order[:cut]] = True
        probs = np.where(keep, probs, 0.0)
        probs /= probs.sum()
    cumulative = np.cumsum(probs)
    # scaling by the total keeps u below it, so the chosen bin always has mass
    u = rng.random() * cumulative[-1]
    return int(np.searchsorted(cumulative, u, side="right"))
