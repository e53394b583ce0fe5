"""The Qwen2.5-Omni thinker stepped one WorkUnit at a time, as transformers' generate steps it."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from omni_cli.backends.base import (
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
from omni_cli.backends.hf.ar import (
    ARCache,
    RaggedBatch,
    batch_bytes,
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
from omni_cli.backends.hf.loading import Loaded
from omni_cli.backends.hf.params import ThinkerParams
from omni_cli.backends.hf.threads import Threads, choose_threads, with_threads
from omni_cli.backends.hf.tokenizer import PromptBuilder


class HFThinker(ThinkerModel):
    """Text LLM. Each step returns the next-token logits, the last hidden state and the input embedding
    of every consumed position: the talker's conditioning."""

    role = "thinker"
    takes_instructions = True  # a request's instructions join the system prompt (tokenizer.py)
    hidden_layer = -1  # the hidden states handed on (ARItem.hidden): the last layer's, after the final norm

    def __init__(self, loaded: Loaded, params: ThinkerParams, name: str = "thinker", threads: Threads | None = None):
        self.name = name
        self.threads = threads or choose_threads(params.num_threads, 0)
        self.module = loaded.model.thinker
        self.model = loaded.model  # the whole checkpoint: a generate reference can share its weights
        self.device = loaded.device
        self.dtype = loaded.dtype
        self.text_config = self.module.config.text_config
        self.prompts = PromptBuilder(loaded.tokenizer, params.system_prompt, params.echo_instruction)
        self.eos_token_ids = frozenset(self._eos_ids())
        self.suppress_token_ids: frozenset[int] = frozenset()  # generate suppresses nothing on the thinker
        self.max_positions = int(self.text_config.max_position_embeddings)
        self.vocab_size = int(self.text_config.vocab_size)
        self.seconds_position = int(self.module.config.position_id_per_seconds)  # TMRoPE: time positions a second

    def _eos_ids(self) -> list[int]:
        # generate stops the thinker at its generation config's EOS; a config without one falls back to
        # the chat template's end-of-turn token
        eos = self.module.generation_config.eos_token_id
        if eos is None:
            eos = self.text_config.eos_token_id
        if eos is None:
            eos = self.prompts.special_id("<|im_end|>")
        if eos is None:
            raise ValueError("the checkpoint names no thinker EOS token and its tokenizer has no <|im_end|>")
        return [int(e) for e in (eos if isinstance(eos, (list, tuple)) else [eos])]

    # ---- ThinkerModel ----
    def encode(self, text: str, mode: str, instructions: str | None = None) -> ThinkerPrompt:
        return self.prompts.encode(text, mode, instructions)

    def decode_text(self, token_ids: list[int]) -> str:
        return self.prompts.decode(token_ids)

    def chat_prompt(self, turns: Sequence[PromptTurn]) -> ListenPrompt:
        return self.prompts.conversation(turns)

    def join_rows(self, parts: list[torch.Tensor]) -> torch.Tensor:
        return torch.cat(parts, dim=0)

    @torch.no_grad()
    @with_threads
    def embed_tokens(self, token_ids: list[int]) -> torch.Tensor:
        ids = torch.tensor([list(token_ids)], dtype=torch.long, device=self.device)
        return self.module.get_input_embeddings()(ids)[0]

    # ---- ARModel ----
    def new_cache(self) -> ARCache:
        return new_cache(self.text_config)

    def weight_bytes(self) -> int:
        return module_bytes(self.module)

    def cache_bytes(self, num_positions: int) -> int:
        # per position: its keys and values, and the last hidden state and input embedding the hand-off
        # keeps for the talker
        handoff = 2 * self.text_config.hidden_size * (torch.finfo(self.dtype).bits // 8)
        return num_positions * (kv_bytes_per_position(self.text_config, self.dtype) + handoff)

    def step_bytes(self, num_new: int, num_positions: int) -> int:
        return step_bytes_estimate(self.text_config, self.vocab_size, num_new, num_positions, self.dtype,
                                   keeps_hidden_states=True)

    def batch_step_bytes(self, kind: str, step_bytes: list[int]) -> int:
        return batch_bytes(kind, step_bytes)

    def kept_bytes(self) -> int:
        return 0  # new shapes keep nothing past the requests' own caches

    @with_threads
    def run(self, kind: str, inputs: list[ARStepInput]) -> list[ARStepOutput]:
        if kind not in (AR_PREFILL, AR_TOKEN):
            raise ValueError(f"the thinker runs ar_prefill and ar_token WorkUnits, not {kind!r}")
        if kind == AR_PREFILL:  # prompts differ in length and run once: one forward each
            return [or_error(self._step, inp, True) for inp in inputs]
        return run_decode_batch(inputs, self._decode_batch, lambda inp: self._step(inp, False))

    @torch.no_grad()
    def _decode_batch(self, inputs: list[ARStepInput]) -> list[ARStepOutput]:
        caches: list[ARCache] = [inp.cache for inp in inputs]
        if any(len(inp.token_ids) != 1 or not c.num_positions for inp, c in zip(inputs, caches, strict=True)):
            raise ValueError("a batched thinker decode step takes one token per request and prefilled caches")
        batch = RaggedBatch(caches, self.text_config, self.device)
        ids = torch.tensor([list(inp.token_ids) for inp in inputs], dtype=torch.long, device=self.device)
        out = self.module(input_ids=ids, attention_mask=batch.attention_mask, position_ids=batch.positions(self.device),
                          cache=batch.kv, use_cache=True, output_hidden_states=True, return_dict=True)
        batch.commit()
        hidden, embeds = out.hidden_states[self.hidden_layer], out.hidden_states[0]
        return [ARStepOutput(logits=last_logits(out.logits, row), hidden=hidden[row], embeds=embeds[row])
                for row in range(len(inputs))]

    @torch.no_grad()
    def _step(self, inp: ARStepInput, is_prefill: bool) -> ARStepOutput:
        cache: ARCache = inp.cache
        if is_prefill and (inp.prefill is not None or cache.num_positions):  # a prefill in parts (heard audio)
            return self._prefill_part(inp)
        if is_prefill != (cache.num_positions == 0):
            raise ValueError("a thinker prefill must be the first step of its cache, and only the first")
        ids = torch.tensor([list(inp.token_ids)], dtype=torch.long, device=self.device)
        if is_prefill:
            mrope, cache.rope_delta = prompt_positions(self.module, ids)
            mrope = mrope.to(self.device)
            cache.prompt_mrope.append(mrope[:, 0])  # a prefill in parts goes on from here
        else:
            mrope = decode_positions(cache, ids.shape[1], self.device)
        # generate passes [text; t; h; w] positions (4 rows): the text row drives the causal mask
        text = torch.arange(cache.num_positions, cache.num_positions + ids.shape[1], device=self.device)
        positions = torch.cat([text.view(1, 1, -1), mrope], dim=0)
        out = self.module(
            input_ids=ids,
            position_ids=positions,
            cache=cache.kv,
            use_cache=True,
            output_hidden_states=True,
            return_dict=True,
        )
        cache.num_positions += ids.shape[1]
        return ARStepOutput(
            logits=last_logits(out.logits),
            hidden=out.hidden_states[self.hidden_layer][0],  # one row per position
            embeds=out.hidden_states[0][0],  # input embeddings, one row per position
        )

    @torch.no_grad()
    def _prefill_part(self, inp: ARStepInput) -> ARStepOutput:
        """One part of a turn that saw pictures or heard audio: text ids, an audio block's rows at its <|AUDIO|>
        positions, or a picture's rows at its <|IMAGE|> positions, appended to the cache. Text and audio take
        the next positions in all three TMRoPE rows; a picture takes (t, h, w) offsets from there (get_rope_index's
        placement), and what follows it starts after its largest position: the rope delta carries that."""
        cache: ARCache = inp.cache
        n, start = len(inp.token_ids), cache.num_positions
        first = start + cache.rope_delta  # the next multimodal position
        if inp.prefill is None:
            embeds = self.module.get_input_embeddings()(torch.tensor([list(inp.token_ids)], device=self.device))
        else:
            rows = inp.prefill.rows if isinstance(inp.prefill, ImageRows) else inp.prefill
            embeds = rows.to(self.device, self.dtype)[None]
        if isinstance(inp.prefill, ImageRows):
            mrope = grid_positions(inp.prefill.grid, first, self.seconds_position,
                                   inp.prefill.seconds_per_step).to(self.device)
        else:
            mrope = torch.arange(first, first + n, device=self.device).view(1, -1).expand(3, -1)
        text = torch.arange(start, start + n, device=self.device).view(1, -1)
        positions = torch.cat([text, mrope], dim=0)[:, None]  # [text; t; h; w]: the text row drives the mask
        out = self.module(inputs_embeds=embeds, position_ids=positions, cache=cache.kv, use_cache=True,
                          output_hidden_states=True, return_dict=True)
        cache.num_positions += n
        cache.rope_delta = int(mrope.max()) + 1 - cache.num_positions
        cache.prompt_mrope.append(mrope)
        # generate hands the talker zeros at audio and image positions in place of their input rows
        handed = out.hidden_states[0][0] if inp.prefill is None else torch.zeros_like(out.hidden_states[0][0])
        # the prompt's positions so far: the last part's reach the talker, which places the prompt as this did
        return ARStepOutput(logits=last_logits(out.logits), hidden=out.hidden_states[self.hidden_layer][0], embeds=handed,
                            extra=torch.cat(cache.prompt_mrope, dim=1))


def grid_positions(grid: tuple[int, int, int], first: int, seconds_position: int,
                   seconds_per_step: float = 1.0) -> torch.Tensor:
    """[3, t * h * w] positions of a picture's or video's rows in row-major (t, h, w) order, from `first`: grid step
    i at time position int(i * seconds_per_step * seconds_position) (get_rope_index's float32 arithmetic: a
    picture's steps are a second apart, a video's its frame groups' seconds), rows and columns one apart."""
    t, h, w = grid
    step = torch.tensor(seconds_per_step, dtype=torch.float32)
    ts = (torch.arange(t) * step * seconds_position).long().view(-1, 1, 1).expand(t, h, w)
    hs = torch.arange(h).view(1, -1, 1).expand(t, h, w)
    ws = torch.arange(w).view(1, 1, -1).expand(t, h, w)
    return torch.stack([ts.flatten(), hs.flatten(), ws.flatten()]) + first
