"""The Qwen3-Omni talker: one codec frame per WorkUnit, its residual codebooks filled by the code predictor inside it.

Hand-off (what `Qwen3OmniMoeForConditionalGeneration.generate` builds for a text-only prompt): the talker's
prefill is the text projection of the thinker's input embeddings over the user turn, then the assistant
header's three tokens and four TTS PADs plus TTS BOS plus reply token 0, each added to the codec embeddings of
(nothing x3, no-think, think BOS, think EOS, the voice, codec PAD, codec BOS). Decode step k >= 1 adds to its
codec input the projected embedding of reply token k while the thinker has consumed it, TTS EOS right after the
reply's last, TTS PAD after that: the pairing of Qwen2.5-Omni's talker (talker.py), on token ids alone.

A frame: the talker predicts its first codebook (group 0) from the logits our loop samples; the step that
consumes that code first runs the code predictor (`num_code_groups - 1` steps over [the talker's last hidden
state, the code's embedding], each code chosen as the step input's `residuals` says: the loop's settings and
the request's seed, loops/residuals.py) for the frame's other groups, then feeds the sum of all the frame's code
embeddings (plus the text vector) to the talker. So the frame a step consumed comes out of that step whole, in
`ARStepOutput.extra`; the predictor's short sequences are equally long for every request, so a batch of steps
runs them as one batch with no padding. A frame whose group 0 is never consumed (codec EOS, or the code the
talker made at its length cap) has no residuals and is not vocoded, as in generate.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from transformers import DynamicCache

from omni_cli.backends.base import AR_PREFILL, AR_TOKEN, ARItem, ARStepInput, ARStepOutput, Prefill, TalkerModel
from omni_cli.backends.hf.ar import (
    ARCache,
    RaggedBatch,
    batch_bytes,
    decode_positions,
    kv_bytes_per_position,
    last_logits,
    module_bytes,
    or_error,
    run_decode_batch,
    step_bytes_estimate,
)
from omni_cli.backends.hf.params import TalkerParams
from omni_cli.backends.hf.qwen3_loading import Qwen3Loaded
from omni_cli.backends.hf.talker import GenerateBounds
from omni_cli.backends.hf.threads import Threads, choose_threads, with_threads

ASSISTANT_HEADER = 3  # <|im_start|> assistant \n: the reply starts after them


@dataclass
class Qwen3TalkerCache(ARCache):
    last_hidden: torch.Tensor | None = None  # [hidden]: the talker's final hidden state at its last position


@dataclass
class Qwen3TalkerPrefill:
    embeds: torch.Tensor  # [P, talker hidden]


class Qwen3Talker(GenerateBounds, TalkerModel):
    makes_frames = True
    role = "talker"

    def __init__(self, loaded: Qwen3Loaded, params: TalkerParams, name: str = "talker", threads: Threads | None = None,
                 card_threads: int = 0):
        self.name = name
        self.threads = threads or choose_threads(params.num_threads, card_threads)
        model = loaded.model
        self.module = model.talker
        self.predictor = model.talker.code_predictor
        self.device, self.dtype = loaded.device, loaded.dtype
        self.config = model.config
        cfg = model.config.talker_config
        self.text_config = cfg.text_config
        self._voices = loaded.voices
        self.max_new_tokens, self.min_new_tokens = params.max_new_tokens, params.min_new_tokens
        self.num_groups = int(cfg.num_code_groups)
        self.residual_groups = self.num_groups - 1
        self.codebook_size = int(model.config.code2wav_config.codebook_size)
        self.vocab_size = int(self.text_config.vocab_size)
        self.codec_eos = int(cfg.codec_eos_token_id)
        self.eos_token_ids = frozenset({self.codec_eos})
        # generate suppresses the codec vocabulary's top 1024 ids (its special tokens) but codec EOS
        self.suppress_token_ids = frozenset(i for i in range(max(0, self.vocab_size - 1024), self.vocab_size)
                                            if i != self.codec_eos)
        self._history_id = int(cfg.codec_pad_id)  # stands for a prefill position (generate's penalty sees none)
        self.max_positions = int(self.text_config.max_position_embeddings)
        self._codec_specials = [int(cfg.codec_nothink_id), int(cfg.codec_think_bos_id), int(cfg.codec_think_eos_id)]
        self._codec_pad_bos = [int(cfg.codec_pad_id), int(cfg.codec_bos_id)]
        self._thinker_embed = model.thinker.get_input_embeddings()
        thinker = model.config.thinker_config
        self._heard_ids = frozenset(int(i) for i in (thinker.audio_token_id, thinker.image_token_id,
                                                      thinker.video_token_id))
        tts = self._projected([model.config.tts_bos_token_id, model.config.tts_eos_token_id,
                               model.config.tts_pad_token_id])
        self._tts_bos, self._tts_eos, self._tts_pad = tts[0], tts[1], tts[2]

    @torch.no_grad()
    def _projected(self, thinker_ids: Sequence[int]) -> torch.Tensor:
        ids = torch.tensor([list(thinker_ids)], device=self.device)
        return self.module.text_projection(self._thinker_embed(ids))[0]

    def voices(self) -> list[str]:
        return self._voices.names()

    # ---- hand-off ----
    def _reply_vector(self, items: Sequence[ARItem], k: int, is_closed: bool) -> torch.Tensor | None:
        if k + 1 < len(items):
            return self._projected(items[k + 1].consumed_ids)[0]
        if not is_closed:
            return None  # the thinker has not consumed reply token k yet
        return self._tts_eos if k + 1 == len(items) else self._tts_pad

    @with_threads
    def prefill_from(self, items: Sequence[ARItem], is_closed: bool, voice: str | None) -> Prefill | None:
        if not items:
            if is_closed:
                raise ValueError("the thinker closed without a prefill item: nothing to speak")
            return None
        prompt = list(items[0].consumed_ids)
        user = _user_turn(prompt, self.config)
        start = _assistant_start(prompt, self.config)
        header = prompt[start:]
        if len(header) != ASSISTANT_HEADER:
            raise ValueError("a Qwen3-Omni talker prefill needs a prompt that ends with the assistant header")
        with torch.no_grad():
            text = torch.cat([self._user_rows(prompt, user, items[0].hidden),
                              self._projected(header), self._tts_pad.expand(4, -1), self._tts_bos[None],
                              self._projected([items[0].token])])
            codec = self.module.get_input_embeddings()(torch.tensor(
                self._codec_specials + [self._voices.codec_id(voice)] + self._codec_pad_bos, device=self.device))
            embeds = text.clone()
            embeds[len(user) + ASSISTANT_HEADER:] += codec
        return Prefill(token_ids=[self._history_id] * embeds.shape[0], payload=Qwen3TalkerPrefill(embeds))

    def _user_rows(self, prompt: list[int], user: list[int], hidden) -> torch.Tensor:
        """generate's user part: heard positions (audio, image, video) from the thinker's hidden states there
        (hidden_projection), the others from its input embeddings (text_projection), each set projected apart."""
        rows = self._tts_pad.new_empty(len(user), self._tts_pad.shape[0])
        heard = [j for j, i in enumerate(user) if prompt[i] in self._heard_ids]
        said = [j for j, i in enumerate(user) if prompt[i] not in self._heard_ids]
        if heard:
            at = torch.tensor([user[j] for j in heard], device=hidden.device)
            rows[heard] = self.module.hidden_projection(hidden[at].to(self.device, rows.dtype))
        if said:
            rows[said] = self._projected([prompt[user[j]] for j in said])
        return rows

    def code_of(self, token: int) -> int | None:
        return token if 0 <= token < self.codebook_size else None

    # ---- ARModel ----
    def new_cache(self) -> Qwen3TalkerCache:
        return Qwen3TalkerCache(kv=DynamicCache(config=self.text_config))

    def weight_bytes(self) -> int:
        return module_bytes(self.module)

    def cache_bytes(self, num_positions: int) -> int:
        return num_positions * kv_bytes_per_position(self.text_config, self.dtype)

    def step_bytes(self, num_new: int, num_positions: int) -> int:
        predictor = step_bytes_estimate(self.predictor.config, self.codebook_size, 2, self.num_groups, self.dtype)
        return step_bytes_estimate(self.text_config, self.vocab_size, num_new, num_positions, self.dtype) + predictor

    def batch_step_bytes(self, kind: str, step_bytes: list[int]) -> int:
        return batch_bytes(kind, step_bytes)

    def kept_bytes(self) -> int:
        return 0

    @with_threads
    def run(self, kind: str, inputs: list[ARStepInput]) -> list[ARStepOutput]:
        if kind == AR_PREFILL:
            return [or_error(self._prefill, inp) for inp in inputs]
        if kind == AR_TOKEN:
            return run_decode_batch(inputs, self._decode, lambda inp: self._decode([inp])[0])
        raise ValueError(f"the talker runs ar_prefill and ar_token WorkUnits, not {kind!r}")

    @torch.no_grad()
    def _prefill(self, inp: ARStepInput) -> ARStepOutput:
        cache: Qwen3TalkerCache = inp.cache
        if not isinstance(inp.prefill, Qwen3TalkerPrefill) or cache.num_positions:
            raise ValueError("a talker prefill needs the payload of prefill_from and a fresh cache")
        embeds = inp.prefill.embeds[None]
        positions = torch.arange(embeds.shape[1], device=self.device).view(1, 1, -1).expand(3, 1, -1)
        out = self.module.model(inputs_embeds=embeds, position_ids=positions, cache=cache.kv, use_cache=True)
        cache.num_positions += embeds.shape[1]
        cache.last_hidden = out.last_hidden_state[0, -1]
        return ARStepOutput(logits=last_logits(self.module.codec_head(out.last_hidden_state[:, -1:])))

    @torch.no_grad()
    def _decode(self, inputs: list[ARStepInput]) -> list[ARStepOutput]:
        caches: list[Qwen3TalkerCache] = [inp.cache for inp in inputs]
        if any(inp.cond is None or len(inp.token_ids) != 1 or c.last_hidden is None
               for inp, c in zip(inputs, caches, strict=True)):
            raise ValueError("a talker decode step takes one codec token, its reply vector and a prefilled cache")
        codes = torch.tensor([inp.token_ids for inp in inputs], device=self.device)  # [B, 1]: each frame's group 0
        frames, embeds, kept = self._residuals(codes, torch.stack([c.last_hidden for c in caches])[:, None],
                                               [inp.residuals for inp in inputs])
        embeds = embeds + torch.stack([inp.cond.reshape(-1) for inp in inputs])[:, None]
        if len(inputs) == 1:
            cache = caches[0]
            out = self.module.model(inputs_embeds=embeds, position_ids=decode_positions(cache, 1, self.device),
                                    cache=cache.kv, use_cache=True)
            cache.num_positions += 1
        else:
            batch = RaggedBatch(caches, self.text_config, self.device)
            out = self.module.model(inputs_embeds=embeds, attention_mask=batch.attention_mask,
                                    position_ids=batch.positions(self.device), cache=batch.kv, use_cache=True)
            batch.commit()
        hidden = out.last_hidden_state[:, -1]
        logits = self.module.codec_head(hidden[:, None])
        for row, cache in enumerate(caches):
            cache.last_hidden = hidden[row]
        return [ARStepOutput(logits=last_logits(logits, row), extra=frames[row], residual_logits=kept[row])
                for row in range(len(inputs))]

    def _residuals(self, codes: torch.Tensor, last_hidden: torch.Tensor,
                   choices: list) -> tuple[list, torch.Tensor, list]:
        """The code predictor, as generate runs it: groups 1.. of each frame from [the talker's last hidden state,
        group 0's embedding], each code chosen as its row's `choices` says (greedy: argmax, as generate's greedy);
        each frame's codes, the sum of their embeddings (the talker's next input), and each row's kept logits."""
        first = self.module.get_input_embeddings()(codes)  # [B, 1, hidden]
        kv = DynamicCache(config=self.predictor.config)
        step_in, inputs, found = torch.cat([last_hidden, first], dim=1), [first], [codes]
        keeps = [c is not None and c.keeps_logits for c in choices]
        picks = not all(c is None or c.greedy for c in choices)  # else the argmax of the tensor, no copy out
        kept: list[list] = [[] for _ in choices]
        for group in range(1, self.num_groups):
            hidden = self.predictor.model(inputs_embeds=step_in, cache=kv, use_cache=True).last_hidden_state
            logits = self.predictor.lm_head[group - 1](hidden[:, -1])  # [B, codebook]
            if picks or any(keeps):
                rows = logits.to(dtype=torch.float32, device="cpu", copy=True).numpy()
                for row in (r for r, keep in enumerate(keeps) if keep):
                    kept[row].append(rows[row])
            if picks:
                code = torch.tensor([[int(rows[r].argmax()) if c is None else c.choose(group, rows[r])]
                                     for r, c in enumerate(choices)], device=self.device)
            else:
                code = logits.argmax(dim=-1, keepdim=True)  # [B, 1]
            found.append(code)
            step_in = self.predictor.model.codec_embedding[group - 1](code)
            inputs.append(step_in)
        frames = torch.cat(found, dim=1).tolist()
        logits_kept = [np.stack(rows) if keep else None for rows, keep in zip(kept, keeps, strict=True)]
        # summed as one tensor, as generate sums them (the same rounding)
        return [tuple(frame) for frame in frames], torch.cat(inputs, dim=1).sum(1, keepdim=True), logits_kept


def _user_turn(prompt: list[int], config) -> list[int]:
    """Positions of the prompt's user turns (from each turn's <|im_start|> to the next), as generate picks them."""
    positions, role = [], None
    for i, token in enumerate(prompt):
        if token == config.im_start_token_id:
            role = prompt[i + 1] if i + 1 < len(prompt) else None
        if role == config.user_token_id:
            positions.append(i)
    return positions


def _assistant_start(prompt: list[int], config) -> int:
    starts = [i for i in range(len(prompt) - 1)
              if prompt[i] == config.im_start_token_id and prompt[i + 1] == config.assistant_token_id]
    if not starts:
        raise ValueError("a Qwen3-Omni talker prefill needs a prompt with an assistant turn")
    return starts[-1]
