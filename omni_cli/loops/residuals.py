"""A talker's residual codebooks: how a step that fills them itself chooses each code, and their rollout record.

Qwen3-Omni's talker samples a frame's first codebook group through the ar_decode loop, then its code predictor
fills the frame's other groups inside the same step, one after another (each feeds the next). The choice of
each of those codes is ours, not the backend's: the loop hands the step a `ResidualChoice` (settings, the
frame's own random numbers, recorded codes when re-scoring) and the component calls it once per group.

The random numbers of a frame come from a stream of their own, keyed by (request seed, loop stage, step):
planning a step twice, batching it with other requests, or running it again alone after a batch broke draws
the same numbers, so batched equals serial and the same seed reproduces.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ..spec.card import SamplingSpec
from .sampling import Drawn, Sampler, model_logprob

RESIDUAL_STREAM = 1  # sets a frame's stream apart from the loop's own ([seed, stage])

RESIDUAL_KEY = "residual_token"  # its column, and a replay's entry "<loop>/residual_token" (codes to force)
# name: dtype; [steps, residual groups], a row per AR step: row k is the frame whose group 0 is token k
RESIDUAL_COLUMNS = {
    RESIDUAL_KEY: np.int64,  # -1: the frame was never consumed (codec EOS, or the token made at the cap)
    "residual_logprob": np.float64,  # under the distribution it was drawn from; NaN where no frame
    "residual_logprob_model": np.float64,  # under the predictor's raw logits
    "residual_entropy": np.float64,  # of the distribution it was drawn from, nats
}


def residual_sampler(loop_sampling: SamplingSpec, residual: SamplingSpec) -> Sampler | None:
    """The sampler of the residual groups, None for greedy: greedy whenever the loop's own sampling is, as
    generate mirrors its talker's do_sample onto the code predictor."""
    if loop_sampling.temperature == 0.0 or residual.temperature == 0.0:
        return None
    return Sampler(residual, (), ())


@dataclass
class ResidualChoice:
    """One step's choice of its frame's residual codes (groups 1..groups), called by the component per group."""

    sampler: Sampler | None  # None: greedy (the first maximum, as torch.argmax)
    key: tuple[int, ...]  # the frame's random stream: (seed, stage, RESIDUAL_STREAM, step)
    groups: int
    forced: Sequence[int] | None = None  # re-scoring: the recorded codes, teacher-forced
    keeps_logits: bool = False  # rollout: the step returns each group's logits
    _uniforms: np.ndarray | None = field(default=None, repr=False)

    @property
    def greedy(self) -> bool:
        return self.sampler is None and self.forced is None

    def choose(self, group: int, logits: np.ndarray) -> int:
        """The code of `group` (1..groups) from its float32 logits; the same answer however often it is asked."""
        if self.forced is not None:
            return int(self.forced[group - 1])
        if self.sampler is None:
            return int(np.argmax(logits))
        if self._uniforms is None:
            self._uniforms = np.random.default_rng(list(self.key)).random(self.groups)
        cumulative = self.sampler.one_row(logits, (), True).cumulative[0]
        return int(cumulative.searchsorted(self._uniforms[group - 1] * cumulative[-1], side="right"))


def behaviour(sampler: Sampler | None, logits: np.ndarray, code: int) -> tuple[float, float, float]:
    """(log-probability under the distribution the code was drawn from, under the raw logits, entropy)."""
    drawn = (Drawn(np.array([int(np.argmax(logits))]), None) if sampler is None
             else sampler.one_row(logits, (), True))
    logprob, entropy = drawn.behaviour(0, code)
    return logprob, model_logprob(logits, code), entropy


class ResidualRecorder:
    """The residual codes of one request's frames and their log-probabilities, frame by frame."""

    def __init__(self, sampler: Sampler | None, groups: int):
        self.sampler, self.groups = sampler, groups
        self.rows: dict[int, tuple] = {}  # frame -> (codes, logprobs, model logprobs, entropies)

    def frame(self, index: int, codes: Sequence[int], logits: np.ndarray) -> None:
        """Frame `index`'s residual codes (groups 1..) and the [groups, vocab] logits each was chosen from."""
        rows = [behaviour(self.sampler, logits[g], int(c)) for g, c in enumerate(codes)]
        self.rows[index] = (list(codes), *([r[i] for r in rows] for i in range(3)))

    def columns(self, num_steps: int) -> dict[str, np.ndarray]:
        fills = (-1, math.nan, math.nan, math.nan)
        out = {}
        for i, (name, dtype) in enumerate(RESIDUAL_COLUMNS.items()):
            column = np.full((num_steps, self.groups), fills[i], dtype=dtype)
            for frame, row in self.rows.items():
                if frame < num_steps:
                    column[frame] = row[i]
            out[name] = column
        return out
