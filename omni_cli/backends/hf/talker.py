"""The Qwen2.5-Omni talker: thinker states in, one codec token per WorkUnit out."""

# Hand-off (the pairing `Qwen2_5OmniForConditionalGeneration.generate` builds): with thinker items
# 0..N-1 (item 0 = prefill, item k = the step that consumed reply token k-1), the reply vectors are
# R = [hidden+embeds of items 1..N-1, embed(text EOS), embed(text PAD), embed(text PAD), ...].
# The talker prefill is [hidden+embeds of every prompt position, embed(voice BOS), R[0]] and talker
# decode step k >= 1 adds R[k] to the embedding of the codec token it consumes.
#
# Codec BOS/PAD in the prefill: the talker adds the codec PAD embedding to the second-to-last and the
# codec BOS embedding to the last prefill position only when it gets an attention mask. Qwen's
# released inference (transformers 4.5x, whose generate kept the mask) therefore always added them;
# 5.x `generate` drops an all-ones mask, so 5.24 skips them for every unpadded request, and the
# first codec token (the last prefill position's output) is then predicted without its BOS. Adding
# them is the default here; `codec_bos_pad_in_prefill: false` skips them to compare like with like.

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from omni_cli.backends.base import AR_PREFILL, AR_TOKEN, ARItem, ARStepInput, ARStepOutput, Prefill, TalkerModel
from omni_cli.backends.hf.ar import (
    ARCache,
    RaggedBatch,
    batch_bytes,
    continued_positions,
    decode_positions,
    kv_bytes_per_position,
    last_logits,
    module_bytes,
    new_cache,
    or_error,
    prompt_positions,
    run_decode_batch,
    step_bytes_estimate,
)
from omni_cli.backends.hf.decode import TalkerStep
from omni_cli.backends.hf.loading import Loaded
from omni_cli.backends.hf.params import HFParams, TalkerParams
from omni_cli.backends.hf.threads import Threads, choose_threads, with_threads


@dataclass
class TalkerPrefill:
    """The payload of a talker prefill: thinker-side input vectors and the text ids behind them."""

    embeds: torch.Tensor  # [P + 2, thinker hidden]
    text_ids: torch.Tensor  # [1, P + 2]: prompt, voice BOS, first reply token (for RoPE positions)
    # the thinker prompt's multimodal positions [3, P] (a prompt with pictures); None: text and audio only
    prompt_positions: torch.Tensor | None = None


class HFTalker(TalkerModel):
    role = "talker"
    codes_bound_is_cap = True  # generate's talker_max_new_tokens: reaching it cuts the speech short

    def __init__(self, loaded: Loaded, params: TalkerParams, settings: HFParams, name: str = "talker",
                 threads: Threads | None = None):
        self.threads = threads or choose_threads(params.num_threads, settings.num_threads)
        self.name = name
        self.module = loaded.model.talker
        # one request's decode step as the module runs it, without its per-call wrapping (decode.py)
        self.step = TalkerStep(self.module) if TalkerStep.applies(self.module) else None
        self.device = loaded.device
        self.dtype = loaded.dtype
        self.config = self.module.config
        self._voices = loaded.voices
        self.add_codec_bos_pad = settings.codec_bos_pad_in_prefill
        self.max_new_tokens = params.max_new_tokens
        self.min_new_tokens = params.min_new_tokens
        cfg = self.config
        self.codec_bos = int(cfg.tts_codec_start_token_id)
        self.codec_pad = int(cfg.tts_codec_pad_token_id)
        self.codec_mask = int(cfg.tts_codec_mask_token_id)
        # generate's default talker EOS list is [8292, 8294] = [codec PAD, codec END] of the real
        # checkpoints; derive it from the config so other vocabularies (the tiny test one) work alike
        self.eos_token_ids = frozenset({int(cfg.tts_codec_end_token_id), self.codec_pad})
        self.suppress_token_ids = frozenset({self.codec_bos})
        self.max_positions = int(cfg.max_position_embeddings)
        self.vocab_size = int(cfg.vocab_size)
        # the DiT's code embedding has num_embeds + 1 rows; anything beyond cannot be vocoded
        self.num_codes = int(loaded.model.token2wav.config.dit_config.num_embeds) + 1
        self._thinker_embed = loaded.model.thinker.get_input_embeddings()
        self._text_eos = self._thinker_vector(int(cfg.tts_text_end_token_id))
        self._text_pad = self._thinker_vector(int(cfg.tts_text_pad_token_id))

    @torch.no_grad()
    def _thinker_vector(self, token_id: int) -> torch.Tensor:
        return self._thinker_embed(torch.tensor([token_id], device=self.device))[0]

    def voices(self) -> list[str]:
        return self._voices.names()

    # ---- hand-off ----
    def _reply_vector(self, items: Sequence[ARItem], k: int, is_closed: bool) -> torch.Tensor | None:
        if k + 1 < len(items):
            item = items[k + 1]
            return (item.hidden + item.embeds).reshape(-1)
        if not is_closed:
            return None  # the thinker has not produced it yet
        return self._text_eos if k + 1 == len(items) else self._text_pad

    @torch.no_grad()
    @with_threads
    def prefill_from(self, items: Sequence[ARItem], is_closed: bool, voice: str | None) -> Prefill | None:
        if not items:
            if is_closed:
                raise ValueError("the thinker closed without a prefill item: nothing to speak")
            return None
        first = self._reply_vector(items, 0, is_closed)
        if first is None:
            return None
        prompt = items[0]
        bos_token = self._voices.get(voice).bos_token
        embeds = torch.cat([prompt.hidden + prompt.embeds, self._thinker_vector(bos_token)[None], first[None]], dim=0)
        text_ids = list(prompt.consumed_ids) + [bos_token, prompt.token]
        num_prompt = len(prompt.consumed_ids)
        # the codec ids of the prefill positions: the history generate's repetition penalty sees
        token_ids = [self.codec_mask] * num_prompt + [self.codec_pad, self.codec_bos]
        payload = TalkerPrefill(embeds=embeds, text_ids=torch.tensor([text_ids], device=self.device),
                                prompt_positions=prompt.extra)
        return Prefill(token_ids=token_ids, payload=payload)

    @with_threads
    def cond_for_step(self, items: Sequence[ARItem], is_closed: bool, step: int) -> torch.Tensor | None:
        if step < 1:
            raise ValueError("talker step 0 is the prefill; decode steps start at 1")
        return self._reply_vector(items, step, is_closed)

    def codes_bounds(self, items: Sequence[ARItem]) -> tuple[int, int]:
        # generate's bounds are constants (talker_min/max_new_tokens, EOS included), the same whether
        # the thinker is done or not: stream and barrier hand-offs stop at the same step
        return self.min_new_tokens, self.max_codes_for(len(items))

    def max_codes_for(self, num_reply_tokens: int) -> int:
        return max(self.max_new_tokens, num_reply_tokens)

    def code_of(self, token: int) -> int | None:
        if token in self.eos_token_ids or token == self.codec_bos or not 0 <= token < self.num_codes:
            return None
        return token

    # ---- ARModel ----
    def new_cache(self) -> ARCache:
        return new_cache(self.config)

    def weight_bytes(self) -> int:
        return module_bytes(self.module)

    def cache_bytes(self, num_positions: int) -> int:
        return num_positions * kv_bytes_per_position(self.config, self.dtype)

    def step_bytes(self, num_new: int, num_positions: int) -> int:
        return step_bytes_estimate(self.config, self.vocab_size, num_new, num_positions, self.dtype)

    def batch_step_bytes(self, kind: str, step_bytes: list[int]) -> int:
        return batch_bytes(kind, step_bytes)

    def kept_bytes(self) -> int:
        return 0  # new shapes keep nothing past the requests' own caches

    @with_threads
    def run(self, kind: str, inputs: list[ARStepInput]) -> list[ARStepOutput]:
        if kind == AR_PREFILL:
            return [or_error(self._prefill, inp) for inp in inputs]
        if kind == AR_TOKEN:
            return run_decode_batch(inputs, self._decode_batch, self._decode)
        raise ValueError(f"the talker runs ar_prefill and ar_token WorkUnits, not {kind!r}")

    @torch.no_grad()
    def _prefill(self, inp: ARStepInput) -> ARStepOutput:
        cache: ARCache = inp.cache
        payload = inp.prefill
        if not isinstance(payload, TalkerPrefill) or cache.num_positions:
            raise ValueError("a talker prefill needs the payload of prefill_from and a fresh cache")
        embeds = payload.embeds
        if self.add_codec_bos_pad:
            codec = self.module.get_input_embeddings()
            tail = codec(torch.tensor([self.codec_pad, self.codec_bos], device=self.device))
            embeds = torch.cat([embeds[:-2], embeds[-2:] + tail], dim=0)
        if payload.prompt_positions is None or not self.add_codec_bos_pad:
            # transformers' generate gives the talker no attention mask, so it places every prompt position in turn
            positions, cache.rope_delta = prompt_positions(self.module, payload.text_ids)
        else:  # Qwen's inference (with a mask) places a picture's positions as the thinker did, then BOS and R[0]
            positions, cache.rope_delta = continued_positions(payload.prompt_positions, 2)
        return self._forward(cache, embeds[None], positions.to(self.device))

    @torch.no_grad()
    def _decode(self, inp: ARStepInput) -> ARStepOutput:
        cache: ARCache = inp.cache
        if inp.cond is None or len(inp.token_ids) != 1 or not cache.num_positions:
            raise ValueError("a talker decode step takes one codec token, its reply vector and a prefilled cache")
        ids = torch.tensor([list(inp.token_ids)], dtype=torch.long, device=self.device)
        embeds = self.module.get_input_embeddings()(ids) + inp.cond.view(1, 1, -1)
        return self._forward(cache, embeds, decode_positions(cache, 1, self.device))

    @torch.no_grad()
    def _decode_batch(self, inputs: list[ARStepInput]) -> list[ARStepOutput]:
        caches: list[ARCache] = [inp.cache for inp in inputs]
        if any(inp.cond is None or len(inp.token_ids) != 1 or not c.num_positions
               for inp, c in zip(inputs, caches, strict=True)):
            raise ValueError("a talker decode step takes one codec token, its reply vector and a prefilled cache")
        batch = RaggedBatch(caches, self.config, self.device)
        ids = torch.tensor([list(inp.token_ids) for inp in inputs], dtype=torch.long, device=self.device)
        conds = torch.stack([inp.cond.reshape(-1) for inp in inputs])[:, None, :]
        embeds = self.module.get_input_embeddings()(ids) + conds
        out = self.module(inputs_embeds=embeds, attention_mask=batch.attention_mask,
                          position_ids=batch.positions(self.device), cache=batch.kv, use_cache=True, return_dict=True)
        batch.commit()
        return [ARStepOutput(logits=last_logits(out.logits, row)) for row in range(len(inputs))]

    def _forward(self, cache: ARCache, embeds: torch.Tensor, positions: torch.Tensor) -> ARStepOutput:
        if embeds.shape[1] == 1 and self.step is not None:  # a decode step alone: the same ops, unwrapped
            logits = self.step(embeds, positions, cache.kv)
        else:
            logits = self.module(
                inputs_embeds=embeds, position_ids=positions, cache=cache.kv, use_cache=True, return_dict=True
            ).logits
        cache.num_positions += embeds.shape[1]
        return ARStepOutput(logits=last_logits(logits))
