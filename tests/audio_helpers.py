"""Shared by the audio writer tests: deterministic chunks and the 44-byte WAV header's fields."""

from __future__ import annotations

import shutil
import struct
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
SR = 24000
CHUNK = 480  # one 50 Hz codec token of audio at 24 kHz
HAS_SOX = shutil.which("sox") is not None


def chunk(index: int, n: int = CHUNK) -> np.ndarray:
    """A deterministic chunk whose samples differ from chunk to chunk."""
    t = np.arange(n, dtype=np.float32)
    return (0.8 * np.sin(0.01 * (t + 1000 * index))).astype(np.float32)


def header_fields(data: bytes) -> tuple:
    return struct.unpack("<4sI4s4sIHHIIHH4sI", data[:44])
