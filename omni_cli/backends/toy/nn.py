"""Numerical building blocks whose rows never depend on what else is in the batch."""

from __future__ import annotations

import numpy as np


def linear(x: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """x [n, d_in] @ weight [d_in, d_out], computed row by row.

    BLAS picks a different kernel (and summation order) for different row counts, so `x @ w`
    would make a request's numbers depend on its batch-mates. A stack of [1, d_in] matmuls runs
    the same kernel for every row: batched ≡ unbatched and chunked ≡ whole hold bit for bit.
    """
    n = x.shape[0]
    return np.matmul(x.reshape(n, 1, -1), weight).reshape(n, -1)


def rms_norm(x: np.ndarray, gain: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + np.float32(eps)) * gain


def silu(x: np.ndarray) -> np.ndarray:
    return x / (np.float32(1.0) + np.exp(-x))


def sigmoid(x: np.ndarray) -> np.ndarray:
    return np.float32(1.0) / (np.float32(1.0) + np.exp(-x))


def softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    z = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return z / np.sum(z, axis=axis, keepdims=True)


def rope_tables(max_positions: int, head_dim: int, theta: float = 10000.0) -> tuple[np.ndarray, np.ndarray]:
    """cos/sin [max_positions, head_dim // 2] for rotary position embeddings."""
    inv = 1.0 / theta ** (np.arange(0, head_dim // 2, dtype=np.float64) * 2 / head_dim)
    angles = np.arange(max_positions, dtype=np.float64)[:, None] * inv[None, :]
    return np.cos(angles).astype(np.float32), np.sin(angles).astype(np.float32)


def apply_rope(x: np.ndarray, cos: np.ndarray, sin: np.ndarray) -> np.ndarray:
    """x [heads, n, head_dim] rotated by the tables' rows for its n positions ([n, head_dim // 2])."""
    half = x.shape[-1] // 2
    a, b = x[..., :half], x[..., half:]
    return np.concatenate([a * cos - b * sin, a * sin + b * cos], axis=-1)


class WeightSource:
    """Draws a component's weights from the card's seed: same seed, same model, on any machine."""

    def __init__(self, seed: int, component_index: int):
        self.rng = np.random.default_rng([seed, component_index])

    def matrix(self, d_in: int, d_out: int, scale: float = 1.0) -> np.ndarray:
        return (self.rng.standard_normal((d_in, d_out)) * (scale / np.sqrt(d_in))).astype(np.float32)

    def table(self, rows: int, dim: int, scale: float = 1.0) -> np.ndarray:
        return (self.rng.standard_normal((rows, dim)) * scale).astype(np.float32)

    def ones(self, dim: int) -> np.ndarray:
        return np.ones(dim, dtype=np.float32)


def weights_identity(kind: str, params: object, arrays: list[np.ndarray]) -> dict:
    """An encoder's identity for rows kept across runs (omni_cli/encoded.py): its class, its params and the
    digest of the weights they drew, with numpy's version (the arithmetic that made the rows)."""
    import dataclasses
    import hashlib

    digest = hashlib.sha256()
    for array in arrays:
        digest.update(f"{array.dtype}{array.shape}".encode())
        digest.update(np.ascontiguousarray(array).tobytes())
    return {"encoder": kind, "params": dataclasses.asdict(params), "weights": digest.hexdigest(),
            "numpy": np.__version__}


class KeptRows:
    """What the toy encoders give rows kept across runs (omni_cli/encoded.py): an identity from their class,
    params and weights (`_params`, `_arrays()`), and rows that are float32 arrays already."""

    _identity: dict | None = None

    def identity(self) -> dict:
        if self._identity is None:
            self._identity = weights_identity(type(self).__name__, self._params, self._arrays())
        return self._identity

    def rows_to_numpy(self, rows: np.ndarray) -> np.ndarray:
        return np.asarray(rows, np.float32)

    def rows_from_numpy(self, array: np.ndarray) -> np.ndarray:
        return np.asarray(array, np.float32)
