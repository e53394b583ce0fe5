"""A small decoder-only transformer with a per-request KV cache, batched over ragged requests."""

from __future__ import annotations

import numpy as np

from .nn import WeightSource, apply_rope, linear, rms_norm, rope_tables, silu, softmax

_FIRST_CAPACITY = 64  # positions; the cache doubles from here


def cache_capacity(positions: int, max_positions: int) -> int:
    """Positions a cache holding `positions` has room for under the doubling policy."""
    capacity = _FIRST_CAPACITY
    while capacity < positions:
        capacity *= 2
    return min(capacity, max_positions)


class KVCache:
    """One request's keys and values, [heads, capacity, head_dim] per layer, grown by doubling."""

    def __init__(self, num_layers: int, num_heads: int, head_dim: int, max_positions: int):
        self.length = 0
        self.max_positions = max_positions
        self.shape = (num_heads, head_dim)
        self.keys = [np.zeros((num_heads, 0, head_dim), np.float32) for _ in range(num_layers)]
        self.values = [np.zeros((num_heads, 0, head_dim), np.float32) for _ in range(num_layers)]

    def _reserve(self, layer: int, needed: int) -> None:
        if self.keys[layer].shape[1] >= needed:
            return
        capacity = cache_capacity(needed, self.max_positions)
        for store in (self.keys, self.values):
            grown = np.zeros((self.shape[0], capacity, self.shape[1]), np.float32)
            grown[:, : self.length] = store[layer][:, : self.length]
            store[layer] = grown

    def append(self, layer: int, k: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Store k, v [heads, n, head_dim] after the cached positions; return all keys and values."""
        end = self.length + k.shape[1]
        self._reserve(layer, end)
        self.keys[layer][:, self.length:end] = k
        self.values[layer][:, self.length:end] = v
        return self.keys[layer][:, :end], self.values[layer][:, :end]

    def nbytes(self) -> int:
        return sum(a.nbytes for a in self.keys) + sum(a.nbytes for a in self.values)


class Decoder:
    """Pre-norm transformer blocks (attention + SiLU-gated MLP) with rotary positions."""

    def __init__(self, ws: WeightSource, d_model: int, num_layers: int, num_heads: int, max_positions: int):
        if d_model % num_heads or (d_model // num_heads) % 2:
            raise ValueError(f"d_model {d_model} must split into {num_heads} heads of even size")
        self.d_model, self.num_layers, self.num_heads = d_model, num_layers, num_heads
        self.head_dim = d_model // num_heads
        self.max_positions = max_positions
        ff = 2 * d_model
        self.layers = [
            {
                "norm1": ws.ones(d_model), "qkv": ws.matrix(d_model, 3 * d_model), "out": ws.matrix(d_model, d_model),
                "norm2": ws.ones(d_model), "gate_up": ws.matrix(d_model, 2 * ff), "down": ws.matrix(ff, d_model),
            }
            for _ in range(num_layers)
        ]
        self.final_norm = ws.ones(d_model)
        self.cos, self.sin = rope_tables(max_positions, self.head_dim)

    def new_cache(self) -> KVCache:
        return KVCache(self.num_layers, self.num_heads, self.head_dim, self.max_positions)

    def cache_bytes(self, positions: int) -> int:
        return 2 * self.num_layers * self.d_model * 4 * cache_capacity(positions, self.max_positions)

    def step_bytes(self, rows: int, positions: int) -> int:
        # activations of one layer for `rows` new positions plus the attention scores over `positions`
        return 4 * rows * (8 * self.d_model + self.num_heads * positions)

    def weight_bytes(self) -> int:
        return sum(w.nbytes for layer in self.layers for w in layer.values()) + self.cos.nbytes + self.sin.nbytes

    def forward(self, rows: list[np.ndarray], caches: list[KVCache]) -> list[np.ndarray]:
        """Run each request's new input rows [n_i, d] through every layer; return their hidden states."""
        sizes = [r.shape[0] for r in rows]
        offsets = np.cumsum([0] + sizes)
        x = np.concatenate(rows, axis=0) if len(rows) > 1 else rows[0]
        for index, layer in enumerate(self.layers):
            qkv = linear(rms_norm(x, layer["norm1"]), layer["qkv"])
            attended = [
                self._attend(index, qkv[offsets[i]:offsets[i + 1]], cache) for i, cache in enumerate(caches)
            ]
            x = x + linear(np.concatenate(attended, axis=0) if len(attended) > 1 else attended[0], layer["out"])
            gate_up = linear(rms_norm(x, layer["norm2"]), layer["gate_up"])
            half = gate_up.shape[1] // 2
            x = x + linear(silu(gate_up[:, :half]) * gate_up[:, half:], layer["down"])
        for cache, n in zip(caches, sizes, strict=True):
            cache.length += n
        x = rms_norm(x, self.final_norm)
        return [x[offsets[i]:offsets[i + 1]] for i in range(len(rows))]

    def _attend(self, layer: int, qkv: np.ndarray, cache: KVCache) -> np.ndarray:
        # attention runs per request: each has its own cache length (ragged batches need no padding)
        n = qkv.shape[0]
        start = cache.length
        if start + n > self.max_positions:
            raise ValueError(f"sequence of {start + n} positions exceeds the model's {self.max_positions}")
        heads = qkv.reshape(n, 3, self.num_heads, self.head_dim).transpose(1, 2, 0, 3)  # [3, H, n, dh]
        cos, sin = self.cos[start:start + n], self.sin[start:start + n]
        q, k = apply_rope(heads[0], cos, sin), apply_rope(heads[1], cos, sin)
        keys, values = cache.append(layer, k, heads[2])
        scores = np.matmul(q, keys.transpose(0, 2, 1)) * np.float32(1.0 / np.sqrt(self.head_dim))
        if n > 1:  # prefill: position start + j sees keys up to itself
            visible = np.arange(start + n)[None, :] <= (start + np.arange(n))[:, None]
            scores = np.where(visible[None], scores, np.float32(-np.inf))
        out = np.matmul(softmax(scores), values)  # [H, n, dh]
        return out.transpose(1, 0, 2).reshape(n, self.d_model)
