"""DiT attention: a decoder layer's attention with its rotary embedding, over the whole window with an additive
mask, or block by block (`BlockedAttention`: each block of queries against the key blocks its mask lets it see,
the same attention up to the order of float sums, and less work the longer the window)."""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS


class BlockedAttention:
    """Attention over a window of `frames` frames in blocks of `block` frames, each block of queries scored
    against the key blocks `back` before it to `ahead` after it: what `DiTDecoderLayer` attends to with its
    block mask, without scoring the pairs the mask drops. The keys of all blocks are one strided view of
    the (padded) keys, so only the queries, the padding and the output are copied."""

    def __init__(self, frames: int, block: int, back: int, ahead: int, dtype: torch.dtype, device: torch.device):
        self.frames, self.block, self.back, self.ahead = frames, block, back, ahead
        self.blocks = -(-frames // block)
        span = back + 1 + ahead
        key_block = torch.arange(self.blocks, device=device)[:, None] + torch.arange(-back, ahead + 1, device=device)
        key_frame = key_block[:, :, None] * block + torch.arange(block, device=device)  # [blocks, span, block]
        real = (key_block[:, :, None] >= 0) & (key_block[:, :, None] < self.blocks) & (key_frame < frames)
        # additive, as attention makes a boolean mask; padded queries (past `frames`) see their block's real keys
        additive = torch.zeros(real.shape, dtype=dtype, device=device).masked_fill_(~real, float("-inf"))
        self.mask = additive.reshape(self.blocks, 1, span * block).expand(-1, block, -1).unsqueeze(0).contiguous()

    @classmethod
    def of_mask(cls, mask: torch.Tensor, block: int, back: int, ahead: int) -> BlockedAttention:
        """One over a given block `mask` ([1, blocks, block, span * block], as made here): dit_aot's exported
        form, whose mask is an input."""
        made = cls.__new__(cls)
        made.block, made.back, made.ahead, made.mask = block, back, ahead, mask
        made.blocks = mask.shape[1]
        return made

    def __call__(self, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
        """[rows, heads, frames, head_dim] each -> [rows, frames, heads * head_dim]."""
        rows, heads, frames, width = query.shape
        block = self.block
        blocks = -(-frames // block)  # self.blocks, from the query's shape (torch.compile: one symbol, frames)
        pad = blocks * block - frames

        def spans(states: torch.Tensor) -> torch.Tensor:  # [rows * heads, blocks, span * block, head_dim], a view
            states = F.pad(states.reshape(rows * heads, frames, width),
                           (0, 0, self.back * block, self.ahead * block + pad))
            span = (self.back + 1 + self.ahead) * block
            return states.as_strided((rows * heads, blocks, span, width), (states.stride(0), block * width, width, 1))

        queries = F.pad(query, (0, 0, 0, pad)).reshape(rows * heads, blocks, block, width)
        out = F.scaled_dot_product_attention(queries, spans(key), spans(value), attn_mask=self.mask)
        out = out.reshape(rows, heads, blocks * block, width)[:, :, :frames]
        return out.transpose(1, 2).reshape(rows, frames, heads * width)


def layer_attention(attn: Any, hidden: torch.Tensor, attend: torch.Tensor | BlockedAttention, cos: torch.Tensor,
                    signed_sin: torch.Tensor) -> torch.Tensor:
    """DiTAttention.forward: the first head's query and key deinterleaved and rotated (transformers'
    `deinterleave_head_dim` and `apply_rotary_pos_emb`) as one gather, two products and a sum each; then
    attention over the whole window with the additive mask `attend`, or block by block (`BlockedAttention`)."""
    rows, frames = hidden.shape[0], hidden.shape[1]
    query, key, value = (F.linear(hidden, proj.weight, proj.bias).view(rows, frames, attn.heads, -1).transpose(1, 2)
                         for proj in (attn.to_q, attn.to_k, attn.to_v))
    half = cos.shape[-1] // 2
    for states in (query, key):
        first = states[:, 0]  # [rows, frames, head_dim], rotary pairs interleaved
        deinterleaved = first.unflatten(-1, (half, 2)).transpose(-1, -2).reshape(first.shape)
        # rotate_half's (-x2, x1) times sin is (x2, x1) times the sin whose first half is negated: exact
        rotated = torch.cat((deinterleaved[..., half:], deinterleaved[..., :half]), dim=-1)
        states[:, 0] = deinterleaved * cos + rotated * signed_sin
    if isinstance(attend, BlockedAttention):
        attended = attend(query, key, value)
    else:
        kernel = ALL_ATTENTION_FUNCTIONS[attn.config._attn_implementation]  # as DiTAttention looks it up
        attended, _ = kernel(attn, query, key, value, attention_mask=attend, is_causal=False)
    out = attn.to_out[0]
    return F.linear(attended.reshape(rows, frames, -1), out.weight, out.bias)
