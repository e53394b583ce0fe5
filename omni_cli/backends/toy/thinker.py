"""The numpy thinker: a byte-level text LLM that reads (echo) or answers (chat) the request's text."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..base import (
    AR_PREFILL,
    AR_TOKEN,
    ARStepInput,
    ARStepOutput,
    ImageRows,
    ListenPrompt,
    PromptTurn,
    ThinkerModel,
    ThinkerPrompt,
)
from .decoder import Decoder
from .nn import WeightSource, linear
from .params import ThinkerParams

# Byte-level vocabulary: 0..255 are UTF-8 bytes, then the special tokens.
BOS, EOS, PAD, SPEAK, CHAT = 256, 257, 258, 259, 260
VOCAB_SIZE = 261
# heard audio: a position per encoded row, between two markers; never sampled (the head stops at VOCAB_SIZE)
AUDIO, AUDIO_BOS, AUDIO_EOS = 261, 262, 263
IMAGE, VISION_BOS, VISION_EOS = 264, 265, 266  # a seen picture likewise: a position per encoded patch


class NumpyThinker(ThinkerModel):
    role = "thinker"

    def __init__(self, name: str, params: ThinkerParams, seed: int):
        self.name = name
        ws = WeightSource(seed, 0)
        self.decoder = Decoder(ws, params.d_model, params.num_layers, params.num_heads, params.max_positions)
        self.embedding = ws.table(VOCAB_SIZE, params.d_model, scale=0.5)
        self.head = ws.matrix(params.d_model, VOCAB_SIZE, scale=2.0)
        # drawn apart from the rest, so a card without input encoders keeps every weight it had (the image
        # markers are drawn after the audio ones, which stay as they were)
        self.markers = WeightSource(seed, 6).table(6, params.d_model, scale=0.5)
        self.d_model = params.d_model
        self.max_positions = params.max_positions
        self.eos_token_ids = frozenset({EOS})
        self.suppress_token_ids = frozenset({BOS, PAD, SPEAK, CHAT})

    # tokenizer
    def encode(self, text: str, mode: str) -> ThinkerPrompt:
        data = list(text.encode("utf-8"))
        if mode == "echo":
            return ThinkerPrompt([BOS, SPEAK], data, EOS)
        return ThinkerPrompt([BOS, CHAT, *data, SPEAK], None)

    def chat_prompt(self, turns: Sequence[PromptTurn]) -> ListenPrompt:
        """BOS, then per user turn CHAT, each picture (then video) as VISION_BOS rows VISION_EOS, each clip as AUDIO_BOS rows
        AUDIO_EOS, its text bytes; per assistant turn SPEAK, its text bytes, EOS; then SPEAK, where the reply
        begins."""
        pieces: list[list[int]] = []
        slots: list[str] = []
        ids = [BOS]
        for turn in turns:
            data = list(turn.text.encode("utf-8"))
            if turn.role == "assistant":
                ids += [SPEAK, *data, EOS]
                continue
            ids.append(CHAT)
            media = [("image", VISION_BOS, VISION_EOS)] * turn.num_images + \
                [("video", VISION_BOS, VISION_EOS)] * turn.num_videos
            for slot, opens, closes in media + [("audio", AUDIO_BOS, AUDIO_EOS)] * turn.num_clips:
                pieces.append([*ids, opens])
                slots.append(slot)
                ids = [closes]
            ids += data
        pieces.append([*ids, SPEAK])
        # a video's positions hold the picture placeholder too: the toy has no token of its own for them
        return ListenPrompt(pieces[0], pieces[-1] if slots else [], AUDIO, IMAGE, pieces, slots, IMAGE)

    def decode_text(self, token_ids: list[int]) -> str:
        return bytes([t for t in token_ids if t < 256]).decode("utf-8", errors="replace")  # a list: faster than a generator

    def embed_tokens(self, token_ids: list[int]) -> np.ndarray:
        ids = np.asarray(token_ids, dtype=np.int64)
        if not len(ids) or ids.max() < VOCAB_SIZE:
            return self.embedding[ids]
        rows = self.embedding[np.minimum(ids, VOCAB_SIZE - 1)]
        rows[ids >= VOCAB_SIZE] = self.markers[ids[ids >= VOCAB_SIZE] - VOCAB_SIZE]
        return rows

    # resources
    def new_cache(self):
        return self.decoder.new_cache()

    def cache_bytes(self, num_positions: int) -> int:
        return self.decoder.cache_bytes(num_positions)

    def step_bytes(self, num_new: int, num_positions: int) -> int:
        return self.decoder.step_bytes(num_new, num_positions)

    def weight_bytes(self) -> int:
        return self.decoder.weight_bytes() + self.embedding.nbytes + self.markers.nbytes + self.head.nbytes

    # work
    def run(self, kind: str, inputs: list[ARStepInput]) -> list[ARStepOutput]:
        if kind not in (AR_PREFILL, AR_TOKEN):
            raise ValueError(f"thinker cannot run {kind!r}")
        # a prefill part of heard audio brings its rows; every other input is embedded from its tokens
        embeds = [self.embed_tokens(i.token_ids) if i.prefill is None
                  else i.prefill.rows if isinstance(i.prefill, ImageRows) else i.prefill for i in inputs]
        hidden = self.decoder.forward(embeds, [i.cache for i in inputs])
        last = np.stack([h[-1] for h in hidden])
        logits = linear(last, self.head)
        return [ARStepOutput(logits[i], hidden[i], embeds[i]) for i in range(len(inputs))]
