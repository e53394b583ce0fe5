"""The rollout profile inside the loops: each WorkUnit's behaviour, recorded as it runs, and teacher forcing.

A recorder sits in a loop state (`state.recorder`); the loop calls it once per WorkUnit and never
otherwise looks at it, so the serve profile (no recorder) records nothing and pays for nothing.
Re-scoring is the same recorder over a replay: the recorded tokens are forced step by step
(`ReplayFeed`) and the log-probabilities are computed again by the same functions from fresh logits.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .base import NO_BOUND, LoopState, OutputBound
from .feeds import ARFeed, StepFeed
from .residuals import RESIDUAL_KEY, ResidualRecorder
from .sampling import Drawn, Sampler, model_logprob

AR_COLUMNS = {  # name: dtype, one entry per AR WorkUnit (the prefill is step 0: it chooses the first token)
    "token": np.int64,  # the token the step chose
    "logprob": np.float64,  # under the distribution it was drawn from; NaN when forced (nothing was drawn)
    "logprob_model": np.float64,  # under the raw model: log softmax of the logits
    "entropy": np.float64,  # of the distribution it was drawn from, nats; NaN when forced
    "forced": np.bool_,  # echo mode: the token was the text's, not sampled
    "eos_suppressed": np.bool_,  # EOS was masked too (below the fewest tokens); the loop's suppressed ids always are
}
AUDIO_COLUMNS = {  # one entry per vocoder chunk
    "start_code": np.int64,  # codes [start_code, end_code) of the utterance
    "end_code": np.int64,
    "num_samples": np.int64,  # samples the chunk made final
    "noise_start": np.int64,  # frames [noise_start, noise_stop) of the request's seeded noise stream; -1: none
    "noise_stop": np.int64,
}


class ARRecorder:
    """One AR loop's behaviour for one request, a column per field of AR_COLUMNS."""

    def __init__(self, sampler: Sampler, feed: ARFeed):
        self.sampler = sampler
        self.feed = feed  # the loop's own feed: it says which steps echo forces
        self.rows: list[tuple] = []
        self.residuals: ResidualRecorder | None = None  # a talker that fills its frames' other groups itself

    def ar_step(self, step: int, logits: np.ndarray, token: int, history: Sequence[int], allow_eos: bool,
                drawn: Drawn | None, row: int | None) -> None:
        """Called by the loop after choosing `token`, before it joins `history` (what the penalty saw)."""
        forced = self.feed.forced_at(step) is not None
        if forced:
            logprob = entropy = math.nan
        else:
            if drawn is None:  # teacher-forced (re-scoring): the distribution the sampler would build
                drawn, row = self.sampler.distribution([logits], [history], [allow_eos]), 0
            logprob, entropy = drawn.behaviour(row, token)
        self.rows.append((token, logprob, model_logprob(logits, token), entropy, forced, not allow_eos))

    def columns(self) -> dict[str, np.ndarray]:
        columns = _columns(AR_COLUMNS, self.rows)
        if self.residuals is not None:
            columns.update(self.residuals.columns(len(self.rows)))
        return columns

    def settings(self) -> dict[str, Any]:
        p = self.sampler.params
        return {"temperature": p.temperature, "top_k": p.top_k, "top_p": p.top_p,
                "repetition_penalty": p.repetition_penalty, "suppressed_ids": list(self.sampler.suppressed),
                "eos_ids": sorted(set(self.sampler.suppressed_and_eos) - set(self.sampler.suppressed))}


class AudioRecorder:
    """One vocoder loop's chunks for one request, a column per field of AUDIO_COLUMNS."""

    def __init__(self) -> None:
        self.rows: list[tuple] = []

    def audio_chunk(self, start: int, end: int, num_samples: int, noise_span: tuple[int, int] | None) -> None:
        self.rows.append((start, end, num_samples, *(noise_span if noise_span is not None else (-1, -1))))

    def columns(self) -> dict[str, np.ndarray]:
        return _columns(AUDIO_COLUMNS, self.rows)

    def settings(self) -> dict[str, Any]:
        return {}


def _columns(spec: dict[str, type], rows: list[tuple]) -> dict[str, np.ndarray]:
    return {name: np.array([r[i] for r in rows], dtype=dtype) for i, (name, dtype) in enumerate(spec.items())}


class ReplayFeed(ARFeed):
    """Teacher forcing: the recorded tokens, step by step, over the loop's own feed (which still gives the
    prefill, the conditioning and the bounds, so the distribution is rebuilt exactly as it was sampled)."""

    def __init__(self, inner: ARFeed, tokens: Sequence[int]):
        self.inner = inner
        self.tokens = list(tokens)

    def prefill(self):
        return self.inner.prefill()

    def step(self, step: int) -> StepFeed | None:
        fed = self.inner.step(step)
        return None if fed is None else StepFeed(forced_token=self.forced_at(step), cond=fed.cond)

    def forced_at(self, step: int) -> int | None:
        return self.tokens[step]

    def bounds(self) -> tuple[int, int | None]:
        fewest, most = self.inner.bounds()
        # never past the recording (a different card may not stop where the recorded one did)
        return fewest, len(self.tokens) if most is None else min(most, len(self.tokens))

    def max_items_bound(self, upstream: OutputBound = NO_BOUND) -> int | None:
        most = self.inner.max_items_bound(upstream)
        return len(self.tokens) if most is None else min(most, len(self.tokens))

    def max_positions_bound(self, upstream: OutputBound = NO_BOUND) -> int | None:
        return self.inner.max_positions_bound(upstream)

    def prefill_bound(self, upstream: OutputBound = NO_BOUND) -> int:
        return self.inner.prefill_bound(upstream)

    def prefill_is_known(self) -> bool:
        return self.inner.prefill_is_known()

    def describe_wait(self) -> str:
        return self.inner.describe_wait()


def attach_recorders(states: Sequence[tuple[Any, LoopState]], replay: Mapping[str, Sequence[int]] | None) -> None:
    """Give each loop state its recorder (the rollout profile): each loop kind says which (`start_recording`).
    With `replay` (loop id: tokens), teacher-force those tokens instead of sampling."""
    for loop, state in states:
        loop.start_recording(state, replay)


def record_ar(loop: Any, state: Any, replay: Mapping[str, Sequence[int]] | None) -> None:
    """An AR loop's recorder; with `replay`, its recorded tokens forced step by step."""
    state.recorder = ARRecorder(loop.sampler, state.feed)
    if loop.residual_groups:
        state.recorder.residuals = ResidualRecorder(loop.residual_sampler, loop.residual_groups)
    if replay is not None:
        if not replay.get(loop.loop_id):
            raise ValueError(f"no recorded tokens for loop {loop.loop_id!r} (recorded: {', '.join(replay)})")
        state.feed = ReplayFeed(state.feed, replay[loop.loop_id])
        if loop.residual_groups:
            rows = replay.get(f"{loop.loop_id}/{RESIDUAL_KEY}")
            if rows is None:
                raise ValueError(f"no recorded residual codes for loop {loop.loop_id!r}")
            state.residual_replay = [list(row) for row in rows]


def record_audio(loop: Any, state: Any, replay: Mapping[str, Sequence[int]] | None) -> None:
    """A vocoder loop's recorder; re-scoring skips the vocoder: it needs log-probabilities, not audio."""
    state.recorder = AudioRecorder()
    if replay is not None:
        loop.abort(state)
