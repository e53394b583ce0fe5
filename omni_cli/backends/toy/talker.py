"""The numpy talker: codec-token LLM conditioned, as in Qwen2.5-Omni, on thinker reply vectors."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..base import AR_PREFILL, AR_TOKEN, ARItem, ARStepInput, ARStepOutput, Prefill, TalkerModel
from .decoder import Decoder
from .nn import WeightSource, linear
from .params import TalkerParams
from .thinker import EOS as TEXT_EOS
from .thinker import PAD as TEXT_PAD
from .thinker import NumpyThinker


class NumpyTalker(TalkerModel):
    """Input row = codec embedding + W_cond · [thinker hidden ; thinker token embedding] (+ voice at prefill)."""

    role = "talker"
    codes_bound_is_cap = False  # codes per reply token is this model's length rule, not a cut

    def __init__(self, name: str, params: TalkerParams, seed: int, thinker: NumpyThinker, voices: list[str]):
        self.name = name
        self.params = params
        ws = WeightSource(seed, 1)
        self.decoder = Decoder(ws, params.d_model, params.num_layers, params.num_heads, params.max_positions)
        k = params.codebook_size
        self.pad_id, self.bos_id, self.eos_id = k, k + 1, k + 2
        self.vocab_size = k + 3
        self.codec_embedding = ws.table(self.vocab_size, params.d_model, scale=0.5)
        self.cond_proj = ws.matrix(2 * thinker.d_model, params.d_model)
        self.voice_embedding = ws.table(max(1, len(voices)), params.d_model, scale=0.5)
        self.head = ws.matrix(params.d_model, self.vocab_size, scale=2.0)
        self.thinker = thinker
        self._voices = list(voices)
        self.max_positions = params.max_positions
        self.eos_token_ids = frozenset({self.eos_id})
        self.suppress_token_ids = frozenset({self.pad_id, self.bos_id})
        self._end_vectors: dict[int, np.ndarray] = {}

    # hand-off: thinker items -> conditioning
    def _reply_vector(self, item: ARItem) -> np.ndarray:
        # the state that chose the token, and the token itself
        # the token's embedding row read directly: embed_tokens([token])[0] is the same row, after two more calls
        return np.concatenate((item.hidden[-1], self.thinker.embedding[item.token]))

    def _end_vector(self, token: int) -> np.ndarray:
        # the same few rows every step after the reply (on the engine's thread, in the feed): made once, read-only
        vector = self._end_vectors.get(token)
        if vector is None:
            vector = np.concatenate([np.zeros(self.thinker.d_model, np.float32), self.thinker.embed_tokens([token])[0]])
            vector.flags.writeable = False
            self._end_vectors[token] = vector
        return vector

    def voices(self) -> list[str]:
        return list(self._voices)

    def prefill_from(self, items: Sequence[ARItem], is_closed: bool, voice: str | None) -> Prefill:
        prompt = items[0]
        cond = np.concatenate([prompt.hidden, prompt.embeds], axis=1)  # one row per thinker prompt position
        cond = np.concatenate([cond, self._reply_vector(prompt)[None]], axis=0)
        ids = [self.pad_id] * prompt.hidden.shape[0] + [self.bos_id]
        voice_index = self._voices.index(voice) if voice is not None else 0  # checked once, in wire()
        return Prefill(ids, (cond, voice_index))

    def cond_for_step(self, items: Sequence[ARItem], is_closed: bool, step: int) -> np.ndarray | None:
        if step < len(items):
            return self._reply_vector(items[step])
        if not is_closed:
            return None
        # the reply is used up: text EOS once (unless the thinker's last item was its EOS), then text PAD
        says_eos = step == len(items) and items[-1].token != TEXT_EOS
        return self._end_vector(TEXT_EOS if says_eos else TEXT_PAD)

    def codes_bounds(self, items: Sequence[ARItem]) -> tuple[int, int]:
        replies = max(1, len(items))
        return self.params.min_codes_per_token * replies, self.max_codes_for(replies)

    def max_codes_for(self, num_reply_tokens: int) -> int:
        return self.params.max_codes_per_token * max(1, num_reply_tokens) + 8

    def code_of(self, token: int) -> int | None:
        return token if token < self.params.codebook_size else None

    # resources
    def new_cache(self):
        return self.decoder.new_cache()

    def cache_bytes(self, num_positions: int) -> int:
        return self.decoder.cache_bytes(num_positions)

    def step_bytes(self, num_new: int, num_positions: int) -> int:
        return self.decoder.step_bytes(num_new, num_positions)

    def weight_bytes(self) -> int:
        extra = self.codec_embedding.nbytes + self.cond_proj.nbytes + self.voice_embedding.nbytes + self.head.nbytes
        return self.decoder.weight_bytes() + extra

    # work
    def run(self, kind: str, inputs: list[ARStepInput]) -> list[ARStepOutput]:
        if kind == AR_PREFILL:
            conds = [i.prefill[0] for i in inputs]
        elif kind == AR_TOKEN:
            conds = [i.cond[None] for i in inputs]
        else:
            raise ValueError(f"talker cannot run {kind!r}")
        sizes = [c.shape[0] for c in conds]
        projected = linear(np.concatenate(conds, axis=0), self.cond_proj)
        rows, offset = [], 0
        for i, n in zip(inputs, sizes, strict=True):
            row = self.codec_embedding[np.asarray(i.token_ids, dtype=np.int64)] + projected[offset:offset + n]
            if kind == AR_PREFILL:
                row = row + self.voice_embedding[i.prefill[1]]
            rows.append(row)
            offset += n
        hidden = self.decoder.forward(rows, [i.cache for i in inputs])
        logits = linear(np.stack([h[-1] for h in hidden]), self.head)
        # logits only, as the hf talker: nothing reads a talker's states (its stream feeds the vocoder's codes,
        # ar_stream@talker), and on a placed talker they would cross back to the driver for nothing
        return [ARStepOutput(logits[i]) for i in range(len(inputs))]
