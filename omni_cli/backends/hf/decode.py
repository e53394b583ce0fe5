"""The talker's forward for one new position of one request, without transformers' per-call wrapping."""

# A small talker's decode step through `module(...)` spends about a quarter of its time outside its decoder
# layers, in the wrapping around them (the decorators that merge config
# defaults and capture outputs, the output classes, `create_causal_mask` deciding that one new position
# needs no mask). Before the first audio the talker runs 36 such steps alone. `TalkerStep` runs what
# `Qwen2_5OmniTalkerForConditionalGeneration.forward` runs for one position of one request given its
# embedding, positions and cache — `thinker_to_talker_proj`, the rotary embedding, each decoder layer's
# norms, projections, rotary, cache update, attention and MLP, the final norm and `codec_head` — with the
# same modules and functions on the same inputs, so the logits and the cache are the same tensors
# (tests/hf/test_hf_decode_step.py). What needs the wrapping (a mask for padded batches, sliding-window
# layers, another attention kernel than sdpa) goes through `module(...)` as before.

from __future__ import annotations

from typing import Any

import torch
from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS
from transformers.models.qwen2_5_omni import modeling_qwen2_5_omni as qwen


class TalkerStep:
    def __init__(self, talker: Any):
        self.talker, self.model = talker, talker.model
        config = self.model.config
        self.attend = ALL_ATTENTION_FUNCTIONS.get_interface(config._attn_implementation, qwen.eager_attention_forward)

    @staticmethod
    def applies(talker: Any) -> bool:
        """Whether a single-row step with no mask is what `module(...)` runs: full attention in every layer,
        through sdpa."""
        config = talker.model.config
        return (config._attn_implementation == "sdpa"
                and all(t == "full_attention" for t in getattr(config, "layer_types", None) or ["full_attention"])
                and not getattr(talker.model, "has_sliding_layers", False))

    def __call__(self, embeds: torch.Tensor, positions: torch.Tensor, cache: Any) -> torch.Tensor:
        """Logits [1, 1, vocab] (float32) for `embeds` [1, 1, embedding_size] at `positions` [3, 1, 1]; the cache
        grows by the position, as in `module(inputs_embeds=..., position_ids=..., cache=..., use_cache=True)`."""
        hidden = self.talker.thinker_to_talker_proj(embeds)
        position_embeddings = self.model.rotary_emb(hidden, positions)
        for layer in self.model.layers:
            residual = hidden
            hidden = residual + self._attention(layer.self_attn, layer.input_layernorm(hidden), position_embeddings, cache)
            residual = hidden
            hidden = residual + layer.mlp(layer.post_attention_layernorm(hidden))
        return self.talker.codec_head(self.model.norm(hidden)).float()

    def _attention(self, attn: Any, hidden: torch.Tensor, position_embeddings: tuple, cache: Any) -> torch.Tensor:
        """Qwen2_5OmniAttention.forward for one position with no mask (what `create_causal_mask` gives sdpa for
        a single unpadded position)."""
        batch, length = hidden.shape[0], hidden.shape[1]
        query = attn.q_proj(hidden).view(batch, length, -1, attn.head_dim).transpose(1, 2)
        key = attn.k_proj(hidden).view(batch, length, -1, attn.head_dim).transpose(1, 2)
        value = attn.v_proj(hidden).view(batch, length, -1, attn.head_dim).transpose(1, 2)
        cos, sin = position_embeddings
        query, key = qwen.apply_rotary_pos_emb(query, key, cos, sin)
        key, value = cache.update(key, value, attn.layer_idx, kwargs={})
        out, _ = self.attend(attn, query, key, value, None, dropout=0.0, scaling=attn.scaling,
                             sliding_window=attn.sliding_window, position_ids=None)
        return attn.o_proj(out.reshape(batch, length, -1).contiguous())
