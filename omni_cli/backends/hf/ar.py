"""What the thinker and talker share: the per-request cache object and position bookkeeping."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from transformers import DynamicCache


@dataclass
class ARCache:
    """One request's AR state. The transformers modules keep `rope_deltas` on `self`, which would mix
    interleaved requests, so positions are computed from here and passed explicitly on every step."""

    kv: Any  # transformers DynamicCache, owned by this request only
    num_positions: int = 0  # positions consumed so far (= next text position)
    rope_delta: int = 0  # multimodal RoPE delta of this request's prompt (0 for a text-only prompt)
    prompt_mrope: list = field(default_factory=list)  # a prefill in parts: each part's [3, n] positions


def new_cache(text_config: Any) -> ARCache:
    return ARCache(kv=DynamicCache(config=text_config))


def prompt_positions(model: Any, token_ids: torch.Tensor) -> tuple[torch.Tensor, int]:
    """3-row multimodal RoPE positions [3, 1, n] of a prompt and its delta, without touching `self`."""
    ones = torch.ones_like(token_ids)
    positions, deltas = model.get_rope_index(token_ids, attention_mask=ones)
    return positions, int(deltas.reshape(-1)[0])


def continued_positions(prompt: torch.Tensor, num_text: int) -> tuple[torch.Tensor, int]:
    """[3, 1, P + num_text] positions of a prompt whose positions are `prompt` [3, P] followed by `num_text`
    text positions (each after the largest so far, as get_rope_index places text), and their delta."""
    start = int(prompt.max()) + 1
    text = torch.arange(start, start + num_text, device=prompt.device).view(1, -1).expand(3, -1)
    positions = torch.cat([prompt, text], dim=1)[:, None]
    return positions, start + num_text - positions.shape[-1]


def decode_positions(cache: ARCache, num_new: int, device: torch.device) -> torch.Tensor:
    """3-row positions [3, 1, num_new] continuing a prompt: text positions shifted by the rope delta."""
    start = cache.num_positions + cache.rope_delta
    row = torch.arange(start, start + num_new, device=device)
    return row.view(1, 1, -1).expand(3, 1, -1)


class RaggedBatch:
    """Decode steps of several requests, one new position each, as one forward over a left-padded copy of
    their caches. Lengths may differ: row i is padded with `longest - length_i` masked positions in front,
    so every row's new position lands at the same index. The requests' own caches take the new keys and
    values only in `commit`, after the forward succeeded; a forward that raised leaves them as they were.

    Batched arithmetic is not bit-equal to one request alone (a matrix product over B rows may pick other
    kernels than over one); the difference is rounding (~1e-7 in the logits, bounded in
    tests/hf/test_hf_batching.py)."""

    def __init__(self, caches: list[ARCache], config: Any, device: torch.device):
        self.caches = caches
        lengths = [c.kv.get_seq_length() for c in caches]
        longest = max(lengths)
        self.kv = DynamicCache(config=config)
        for layer in range(len(caches[0].kv.layers)):
            keys = [c.kv.layers[layer].keys for c in caches]
            values = [c.kv.layers[layer].values for c in caches]
            self.kv.update(_left_pad(keys, lengths, longest), _left_pad(values, lengths, longest), layer)
        mask = torch.ones(len(caches), longest + 1, dtype=torch.long, device=device)
        for row, length in enumerate(lengths):
            mask[row, : longest - length] = 0
        self.attention_mask = mask

    def positions(self, device: torch.device) -> torch.Tensor:
        """3-row multimodal RoPE positions [3, B, 1]: each row continues its own request."""
        return torch.cat([decode_positions(c, 1, device) for c in self.caches], dim=1)

    def commit(self) -> None:
        for layer, batched in enumerate(self.kv.layers):
            keys, values = batched.keys[:, :, -1:], batched.values[:, :, -1:]
            for row, cache in enumerate(self.caches):
                cache.kv.update(keys[row:row + 1], values[row:row + 1], layer)
        for cache in self.caches:
            cache.num_positions += 1


def _left_pad(tensors: list[torch.Tensor], lengths: list[int], longest: int) -> torch.Tensor:
    """[B, heads, longest, head_dim]: each request's [1, heads, length, head_dim] with zeros in front."""
    if all(n == longest for n in lengths):
        return torch.cat(tensors)
    first = tensors[0]
    out = first.new_zeros(len(tensors), first.shape[1], longest, first.shape[3])
    for row, (t, n) in enumerate(zip(tensors, lengths, strict=True)):
        out[row, :, longest - n:] = t[0]
    return out


def kv_bytes_per_position(config: Any, dtype: torch.dtype) -> int:
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    elem = torch.finfo(dtype).bits // 8
    return 2 * config.num_hidden_layers * config.num_key_value_heads * head_dim * elem


def step_bytes_estimate(config: Any, vocab_size: int, num_new: int, num_positions: int, dtype: torch.dtype,
                        keeps_hidden_states: bool = False) -> int:
    """Peak memory of a forward adding `num_new` positions to `num_positions` in all: the logits of every
    new position (transformers computes them all; we copy out only the last row) or, before them, one
    layer's MLP activations, whichever is larger; the hidden states of every layer when they are asked
    for (the thinker: the hand-off reads the last); attention scores. A decode step may run in a
    `RaggedBatch`, which holds a copy of the request's cache for the forward (the padding that lines a row
    up with a longer batch-mate is not counted: at most the difference). Checked against the resident set
    (examples/hf_memory.py, tests/hf/test_hf_memory.py)."""
    elem = torch.finfo(dtype).bits // 8
    layers = config.num_hidden_layers + 1 if keeps_hidden_states else 2
    per_position = (max(vocab_size, 3 * config.intermediate_size) + layers * config.hidden_size) * elem
    scores = config.num_attention_heads * num_new * num_positions * 4
    batch_copy = num_positions * kv_bytes_per_position(config, dtype) if num_new == 1 else 0
    return num_new * per_position + scores + batch_copy


def batch_bytes(kind: str, step_bytes: list[int]) -> int:
    """A thinker or talker batch at its peak: prefills run one forward each (what each keeps is in its
    cache bytes), decode steps one forward together."""
    from omni_cli.backends.base import AR_PREFILL

    return max(step_bytes) if kind == AR_PREFILL else sum(step_bytes)


def last_logits(logits: torch.Tensor, row: int = 0) -> np.ndarray:
    # generate copies the last position's logits to float32 before any processing; so do we. A copy
    # always: a view of a float32 CPU tensor would keep the whole [positions, vocab] logits alive for
    # as long as the loop holds the row (33 MB per request for a 55-token prompt at 3B width)
    return logits[row, -1].to(dtype=torch.float32, device="cpu", copy=True).numpy()


def module_bytes(module: torch.nn.Module) -> int:
    return sum(t.numel() * t.element_size() for t in list(module.parameters()) + list(module.buffers()))


def run_decode_batch(inputs: list[Any], batched: Any, alone: Any) -> list[Any]:
    """Decode steps as one ragged batch when there are several, else (or when the batch raised, which
    leaves every cache as it was) one request at a time, each failure in its own place."""
    if len(inputs) > 1:
        try:
            return batched(inputs)
        except Exception:  # find the request that broke: alone, the others step normally
            pass
    return [or_error(alone, inp) for inp in inputs]


def or_error(step: Any, *args: Any) -> Any:
    """One request's step, or the exception it raised: the requests before it in the batch already
    advanced their caches, so the engine must not run them again (see Component.run)."""
    try:
        return step(*args)
    except Exception as exc:
        return exc
