"""The logits processing transformers' Omni `generate` applies, as a pure numpy function (no torch)."""

# `Qwen2_5OmniForConditionalGeneration.generate` (5.24) runs:
# - thinker: the thinker's generation config, which for Qwen2.5-Omni checkpoints has no processors:
#   greedy argmax unless `thinker_do_sample=True` is passed.
# - talker: repetition penalty 1.05 over the talker's whole id sequence (prefill codec ids included),
#   then codec BOS suppressed (-inf); with `talker_do_sample=True` (its default) then temperature 0.9,
#   top-k 40, top-p 0.8 and a multinomial draw. With `talker_do_sample=False` the penalty and the
#   suppression still apply before the argmax.

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

# generate's defaults, per stage; `do_sample=False` keeps only the processors above the sampling line
THINKER_GENERATE_DEFAULTS = {"do_sample": False, "repetition_penalty": 1.0}
TALKER_GENERATE_DEFAULTS = {
    "do_sample": True,
    "repetition_penalty": 1.05,
    "temperature": 0.9,
    "top_k": 40,
    "top_p": 0.8,
}


def hf_parity_processing(
    logits: np.ndarray,
    history: Iterable[int],
    repetition_penalty: float = 1.0,
    suppress_token_ids: Iterable[int] = (),
) -> np.ndarray:
    """Scores after generate's repetition penalty and token suppression, bit-equal to transformers'.

    `history` is every id of the sequence so far (the prefill ids, then every generated token). Each
    distinct id's score is divided by the penalty when positive and multiplied when negative, once.
    """
    scores = np.array(logits, dtype=np.float32, copy=True)
    if repetition_penalty != 1.0:
        seen = np.unique(np.fromiter(history, dtype=np.int64))
        seen = seen[(seen >= 0) & (seen < scores.shape[0])]
        picked = scores[seen]
        # float32 arithmetic with a float32 penalty, as torch does on float32 scores
        penalty = np.float32(repetition_penalty)
        scores[seen] = np.where(picked < 0, picked * penalty, picked / penalty)
    suppressed = [t for t in suppress_token_ids if 0 <= t < scores.shape[0]]
    if suppressed:
        scores[suppressed] = -np.inf
    return scores
