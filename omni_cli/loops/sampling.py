"""Choosing the next token from logits: greedy or seeded sampling, ours rather than a backend's."""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass

import numpy as np

from ..spec.card import SamplingSpec

_F32 = np.dtype(np.float32)


def apply_repetition_penalty(logits: np.ndarray, history: Sequence[int], penalty: float) -> np.ndarray:
    """As Hugging Face does: each seen token's score is divided by `penalty` if positive, else multiplied."""
    if penalty == 1.0 or not history:
        return logits
    out = logits.copy()
    penalize_rows(out[None], [history], penalty)  # a view: the row is penalized in place
    return out


def _seen(history: Sequence[int], size: int) -> np.ndarray:
    """The distinct ids of `history` inside a vocabulary of `size`, in no particular order (a set, not a sort:
    faster than np.unique; the penalty reads each id once either way)."""
    seen = np.fromiter(set(history), dtype=np.int64)
    return seen[(seen >= 0) & (seen < size)]


def penalize_rows(scores: np.ndarray, histories: Sequence[Sequence[int]], penalty: float) -> None:
    """`apply_repetition_penalty` on each row of `scores` [rows, vocab], in place, as one indexed update."""
    size = scores.shape[1]
    flat = [row * size + _seen(history, size) for row, history in enumerate(histories) if history]
    if penalty == 1.0 or not flat:
        return
    where = np.concatenate(flat)
    values = scores.reshape(-1)  # a view: scores is C-contiguous
    picked = values[where]
    values[where] = np.where(picked < 0, picked * np.float32(penalty), picked / np.float32(penalty))


class Sampler:
    """One loop's token choice: its sampling settings and the ids it never (or not yet) picks."""

    def __init__(self, params: SamplingSpec, suppressed: Collection[int], eos: Collection[int]):
        self.params = params
        self.suppressed = sorted(suppressed)
        self.suppressed_and_eos = sorted(set(suppressed) | set(eos))
        self._masks: dict[tuple[int, bool], np.ndarray] = {}  # additive: 0 or -inf, per vocab size
        # the settings as the per-step code reads them (each draw is on the engine's thread)
        self._penalty = params.repetition_penalty
        # float32 logits times a Python float multiply in float32 (NEP 50): the same as times this float32
        self._scale = np.float32(1.0 / params.temperature) if params.temperature != 0.0 else None  # None: greedy
        self._top_k, self._top_p = params.top_k, params.top_p

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
        return self.draw(self.distribution(logits, histories, allow_eos), rngs)

    def distribution(self, logits: Sequence[np.ndarray], histories: Sequence[Sequence[int]],
                     allow_eos: Sequence[bool]) -> Drawn:
        """The rows the tokens are drawn from: penalty, masks, temperature, top-k, top-p, row by row."""
        if len(logits) == 1:  # the common case at low concurrency
            return self.one_row(logits[0], histories[0], allow_eos[0])
        p, penalty = self.params, self._penalty
        # one C call: each row cast to float32 as np.asarray(x, dtype=np.float32) does (a copy: ours to change)
        scores = np.array(logits, dtype=np.float32)
        if penalty != 1.0:
            penalize_rows(scores, histories, penalty)
        size = scores.shape[1]
        masks = (self._mask(size, allow_eos[0]) if len(set(allow_eos)) == 1
                 else np.stack([self._mask(size, a) for a in allow_eos]))
        if self._scale is None:
            return Drawn(np.argmax(scores + masks, axis=1), None)  # first maximum, as torch.argmax
        z = scores * self._scale + masks  # float64: the masks are; a fresh array, changed in place
        k = p.top_k
        if 0 < k < size:
            kth = z.copy()
            kth.partition(-k, axis=1)
            z[z < kth[:, -k:-k + 1 or None]] = -np.inf
        z -= np.maximum.reduce(z, axis=1, keepdims=True)
        probs = np.exp(z, out=z)
        if p.top_p < 1.0:
            _top_p(probs, p.top_p)
        return Drawn(None, probs, np.add.accumulate(probs, axis=1))

    def one_row(self, logits: np.ndarray, history: Sequence[int], allow_eos: bool) -> Drawn:
        """`distribution` of one row, the same operations on the same numbers (so the same bits) with fewer
        numpy calls: a draw costs about as much as the talker's step on the toy card, all of it fixed cost."""
        scores = logits if logits.__class__ is np.ndarray and logits.dtype == _F32 else np.asarray(logits, dtype=_F32)
        if self._penalty != 1.0:
            scores = apply_repetition_penalty(scores, history, self._penalty)
        key = (scores.shape[0], allow_eos)
        mask = self._masks.get(key)
        if mask is None:
            mask = self._mask(*key)
        if self._scale is None:
            return Drawn((scores + mask)[None].argmax(axis=1), None)  # first maximum, as torch.argmax
        z = scores * self._scale + mask  # float32, then float64: as the rows above
        k = self._top_k
        if 0 < k < z.shape[0]:
            ranked = z.copy()
            ranked.partition((-k, -1) if k > 1 else -1)  # the k-th largest and the largest, in place
            z[z < ranked[-k]] = -np.inf
            z -= ranked[-1]  # the same maximum a reduction finds
        else:  # the ufunc itself: ndarray.max (and cumsum, below) add a Python-level wrapper
            z -= np.maximum.reduce(z)
        np.exp(z, out=z)
        probs = z[None]
        if self._top_p < 1.0:
            _top_p(probs, self._top_p)
        return Drawn(None, probs, np.add.accumulate(z)[None])

    def draw(self, dist: Drawn, rngs: Sequence[np.random.Generator]) -> list[int]:
        """One token per row of `dist`, one uniform number from each row's generator (none when greedy)."""
        if dist.greedy is not None:
            return dist.greedy.tolist()
        cumulative = dist.cumulative
        # scaling by each row's total keeps u below it, so the chosen bin always has mass; the token is
        # the number of bins whose cumulative mass is <= u (a cumulative sum never decreases)
        if len(rngs) == 1:
            return [self.draw_one(dist, rngs[0])]
        u = np.array([rng.random() for rng in rngs]) * cumulative[:, -1]
        return np.add.reduce(cumulative <= u[:, None], axis=1).tolist()  # counts (int64), as np.sum

    def draw_one(self, dist: Drawn, rng: np.random.Generator) -> int:
        """`draw` of a one-row `dist` (`one_row`'s) with its generator: the same token, without the lists."""
        if dist.greedy is not None:
            return int(dist.greedy[0])
        row = dist.cumulative[0]
        return int(row.searchsorted(rng.random() * row[-1], side="right"))


def _top_p(probs: np.ndarray, top_p: float) -> None:
    """Nucleus filtering in place, row by row: each row normalised, then zero past its top_p prefix."""
    for row in probs:
        row /= row.sum()
        order = np.argsort(-row, kind="stable")
        # keep the smallest prefix whose mass reaches top_p (always at least one token)
        cut = int(np.searchsorted(np.cumsum(row[order]), top_p)) + 1
        row[order[cut:]] = 0.0


@dataclass(slots=True)
class Drawn:
    """What a batch of tokens is drawn from, row by row: the very arrays `Sampler.draw` reads."""

    greedy: np.ndarray | None  # temperature 0: each row's token (all its mass on it)
    probs: np.ndarray | None = None  # float64 [rows, vocab], unnormalised, zero where filtered out
    cumulative: np.ndarray | None = None  # running sums of probs: a row's mass is its last entry

    def behaviour(self, row: int, token: int) -> tuple[float, float]:
        """(log-probability of `token`, entropy) under row `row`, the distribution its draw used (rollouts).

        The draw picks bin t with probability probs[t] / cumulative[-1] (it scales u by that total), so
        these are the numbers behind it; -inf for a token the filters removed. Greedy: a point mass.
        """
        if self.greedy is not None:
            return (0.0 if token == int(self.greedy[row]) else -math.inf), 0.0
        probs, total = self.probs[row], self.cumulative[row, -1]
        q = probs[probs > 0.0] / total
        entropy = float(-np.sum(q * np.log(q)))
        mass = probs[token]
        return (math.log(mass / total) if mass > 0.0 else -math.inf), entropy


def model_logprob(logits: np.ndarray, token: int) -> float:
    """log softmax(logits)[token] in float64: the raw model's log-probability, before any sampling setting."""
    x = np.asarray(logits, dtype=np.float64)
    top = x.max()
    return float(x[token] - top - math.log(np.sum(np.exp(x - top))))
