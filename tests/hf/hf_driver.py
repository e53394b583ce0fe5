"""A minimal hand loop over the hf components (greedy), one WorkUnit per `next()`, for the tests."""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from omni_cli.backends.base import (
    AR_PREFILL,
    AR_TOKEN,
    AUDIO_CHUNK,
    ARItem,
    ARStepInput,
    VocoderChunkInput,
)
from omni_cli.backends.hf.processing import TALKER_GENERATE_DEFAULTS
from omni_cli.loops.sampling import apply_repetition_penalty


@dataclass
class Outcome:
    thinker_tokens: list[int] = field(default_factory=list)
    talker_tokens: list[int] = field(default_factory=list)
    codes: list[int] = field(default_factory=list)
    chunks: list[np.ndarray] = field(default_factory=list)
    codes_at_chunk: list[int] = field(default_factory=list)  # codes that existed when each chunk ran
    units: list[str] = field(default_factory=list)  # the WorkUnit kinds in the order they ran

    @property
    def waveform(self) -> np.ndarray:
        return np.concatenate(self.chunks) if self.chunks else np.zeros(0, np.float32)


def speak(
    parts: dict[str, Any],
    text: str,
    *,
    mode: str = "chat",
    voice: str = "Chelsie",
    seed: int = 0,
    thinker_max: int = 12,
    talker_max: int = 80,
    chunk_codes: int = 0,
    stream: bool = True,
) -> Generator[str, None, Outcome]:
    """Thinker -> talker -> vocoder for one request; yields after every WorkUnit, returns the Outcome.

    stream: the talker runs as soon as its reply vector exists and the vocoder as soon as a chunk
    plus look-ahead exists; otherwise each stage waits for the previous one to finish (barrier).
    chunk_codes: codes per vocoder chunk; 0 = one whole-utterance chunk.
    """
    thinker, talker, vocoder = parts["thinker"], parts["talker"], parts["vocoder"]
    prompt = thinker.encode(text, mode)
    out = Outcome()
    items: list[ARItem] = []
    t_cache, k_cache, v_state = thinker.new_cache(), talker.new_cache(), vocoder.new_state(voice, seed=seed)
    done = {"thinker": False, "talker": False, "vocoder": False}
    talker_history: list[int] = []
    next_start = 0

    def thinker_step() -> bool:
        if done["thinker"]:
            return False
        if not items:
            consumed = list(prompt.prefill_ids)
            res = thinker.run(AR_PREFILL, [ARStepInput(t_cache, consumed)])[0]
        else:
            consumed = [items[-1].token]
            res = thinker.run(AR_TOKEN, [ARStepInput(t_cache, consumed)])[0]
        k = len(items)
        if prompt.forced_ids is not None:
            forced = list(prompt.forced_ids) + [min(thinker.eos_token_ids)]
            token = forced[k]
        else:
            token = greedy(res.logits, thinker.suppress_token_ids)
        items.append(ARItem(k, consumed, token, res.hidden, res.embeds))
        out.thinker_tokens.append(token)
        done["thinker"] = token in thinker.eos_token_ids or len(items) >= thinker_max
        return True

    def talker_step() -> bool:
        if done["talker"] or (not stream and not done["thinker"]):
            return False
        if not out.talker_tokens:
            prefill = talker.prefill_from(items, done["thinker"], voice)
            if prefill is None:
                return False
            res = talker.run(AR_PREFILL, [ARStepInput(k_cache, prefill.token_ids, prefill=prefill.payload)])[0]
            talker_history.extend(prefill.token_ids)
        else:
            cond = talker.cond_for_step(items, done["thinker"], len(out.talker_tokens))
            if cond is None:
                return False
            res = talker.run(AR_TOKEN, [ARStepInput(k_cache, [out.talker_tokens[-1]], cond=cond)])[0]
        penalty = TALKER_GENERATE_DEFAULTS["repetition_penalty"]
        scores = suppress_ids(apply_repetition_penalty(res.logits, talker_history, penalty), talker.suppress_token_ids)
        token = int(np.argmax(scores))
        out.talker_tokens.append(token)
        talker_history.append(token)
        code = talker.code_of(token)
        if code is not None:
            out.codes.append(code)
        most = min(talker_max, talker.codes_bounds(items)[1])
        done["talker"] = token in talker.eos_token_ids or len(out.talker_tokens) >= most
        return True

    def vocoder_step() -> bool:
        nonlocal next_start
        if done["vocoder"] or (not stream and not done["talker"]):
            return False
        num_codes, is_final = len(out.codes), done["talker"]
        if chunk_codes == 0:
            if not is_final:
                return False
            end = num_codes
        else:
            end = min(next_start + chunk_codes, num_codes)
            if not is_final and next_start + chunk_codes + vocoder.lookahead_codes > num_codes:
                return False
        chunk = VocoderChunkInput(v_state, out.codes, next_start, end, is_final)
        out.chunks.append(vocoder.run(AUDIO_CHUNK, [chunk])[0].samples)
        out.codes_at_chunk.append(num_codes)
        next_start = end
        done["vocoder"] = is_final and end == num_codes
        return True

    stages = (("thinker", thinker_step), ("talker", talker_step), ("vocoder", vocoder_step))
    while not done["vocoder"]:
        ran = False
        for name, step in stages:
            if step():
                ran = True
                out.units.append(name)
                yield name
        assert ran, f"no stage could run: {done}"
    return out


def suppress_ids(logits: np.ndarray, ids) -> np.ndarray:
    scores = np.array(logits, dtype=np.float32, copy=True)
    scores[sorted(ids)] = -np.inf
    return scores


def greedy(logits: np.ndarray, suppress: frozenset[int]) -> int:
    return int(np.argmax(suppress_ids(logits, suppress)))


def run_alone(gen: Generator[str, None, Outcome]) -> Outcome:
    while True:
        try:
            next(gen)
        except StopIteration as stop:
            return stop.value


def run_interleaved(*gens: Generator[str, None, Outcome]) -> list[Outcome]:
    """Round-robin: one WorkUnit of each unfinished request in turn."""
    results: list[Outcome | None] = [None] * len(gens)
    while any(r is None for r in results):
        for i, gen in enumerate(gens):
            if results[i] is None:
                try:
                    next(gen)
                except StopIteration as stop:
                    results[i] = stop.value
    return results  # type: ignore[return-value]
