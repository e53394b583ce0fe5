"""An hf input tower's identity for rows kept across runs (omni_cli/encoded.py), and its rows as float32 and back.

The identity names the tower's weights by digest. Hashing a real tower's tensors takes a second or two, so the
digest is itself kept in omni's cache under the checkpoint folder's path and each of its files' size and
modification time (as the Piper voice's digest is): an unchanged checkpoint is not hashed again, and a file
replaced or edited in place gives a new key, so a new digest.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np
import torch

from omni_cli import cache


def tower_identity(encoder: Any, tower: torch.nn.Module, model_path: str, settings: dict) -> dict:
    """What a tower's rows depend on besides the input: its class, its weights' digest, its config, the
    processor's `settings`, dtype, device type and the library versions."""
    import transformers

    device = torch.device(encoder.device).type if not isinstance(encoder.device, torch.device) else encoder.device.type
    return {"encoder": type(encoder).__name__, "weights": weights_digest(tower, model_path, str(encoder.dtype)),
            "config": tower.config.to_dict(), "settings": settings, "dtype": str(encoder.dtype), "device": device,
            "torch": torch.__version__, "transformers": transformers.__version__}


def weights_digest(module: torch.nn.Module, model_path: str, dtype: str) -> str:
    """The SHA-256 of `module`'s tensors as loaded, remembered under the checkpoint's files' sizes and times."""
    folder = Path(model_path).expanduser().resolve()
    stats = []
    for path in sorted(folder.iterdir()):
        if path.is_file():
            info = path.stat()
            stats.append([path.name, info.st_size, info.st_mtime_ns])
    key = json.dumps([str(folder), type(module).__name__, dtype, stats])
    try:
        folder = cache.cache_dir("encoded", "weights")
    except (cache.CacheRefused, OSError):
        return _hash_tensors(module)  # the store is refused too; this run only
    return cache.remembered_digest(folder, key, lambda: _hash_tensors(module))


def _hash_tensors(module: torch.nn.Module) -> str:
    digest = hashlib.sha256()
    for name, tensor in sorted(module.state_dict().items()):
        flat = tensor.detach().to("cpu").contiguous().reshape(-1)
        digest.update(f"{name}\0{tensor.dtype}\0{tuple(tensor.shape)}\0".encode())
        digest.update(flat.view(torch.uint8).numpy().tobytes() if flat.numel() else b"")
    return digest.hexdigest()


def array_digest(array: Any) -> str:
    return hashlib.sha256(np.ascontiguousarray(np.asarray(array, np.float32)).tobytes()).hexdigest()


def rows_to_numpy(rows: torch.Tensor) -> np.ndarray:
    """float32, bfloat16 and float16 rows as float32 exactly."""
    return rows.detach().to("cpu", torch.float32).numpy()


def rows_from_numpy(array: np.ndarray, device: Any, dtype: torch.dtype) -> torch.Tensor:
    return torch.from_numpy(np.ascontiguousarray(array, np.float32)).to(device, dtype)
