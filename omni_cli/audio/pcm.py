"""float32 -> 16-bit PCM conversion and the 44-byte RIFF/WAVE header."""

from __future__ import annotations

import struct

import numpy as np

PCM16_SCALE = 32767
BYTES_PER_SAMPLE = 2
WAV_HEADER_BYTES = 44
# a pipe cannot be seeked back to, so its header says "unknown length" (as ffmpeg writes)
UNKNOWN_SIZE = 0xFFFFFFFF
# the RIFF size field (36 + data size) is a uint32
MAX_WAV_DATA_BYTES = 0xFFFFFFFF - (WAV_HEADER_BYTES - 8)

_HEADER = struct.Struct("<4sI4s4sIHHIIHH4sI")


def float_to_pcm16(samples: np.ndarray, channels: int = 1) -> np.ndarray:
    """Convert float samples in [-1, 1] to little-endian int16, same shape as the input.

    The conversion, exactly: NaN -> 0, +inf -> 1, -inf -> -1; clip to [-1, 1]; multiply by
    32767 (in float64, so the product of a float32 sample is exact); round half to even
    (`np.rint`). So 1.0 -> 32767, -1.0 -> -32767 (-32768 is never produced), 0.5 -> 16384
    (16383.5 rounds to even).

    Mono takes shape (n,) or (n, 1); `channels` > 1 takes (n, channels), frames in rows.
    """
    x = np.asarray(samples)
    if not np.issubdtype(x.dtype, np.floating):
        raise TypeError(f"audio samples must be floating point in [-1, 1], got {x.dtype}")
    is_mono_vector = channels == 1 and x.ndim == 1
    if not is_mono_vector and (x.ndim != 2 or x.shape[1] != channels):
        expected = "(n,) or (n, 1)" if channels == 1 else f"(n, {channels})"
        raise ValueError(f"audio samples must have shape {expected}, got {x.shape}")
    y = np.nan_to_num(x.astype(np.float64), nan=0.0, posinf=1.0, neginf=-1.0)
    np.clip(y, -1.0, 1.0, out=y)
    return np.rint(y * PCM16_SCALE).astype("<i2")


def wav_header(sample_rate: int, channels: int, data_bytes: int) -> bytes:
    """The canonical 44-byte PCM WAV header; `data_bytes=UNKNOWN_SIZE` for a stream."""
    if data_bytes == UNKNOWN_SIZE:
        riff_bytes = UNKNOWN_SIZE
    else:
        riff_bytes = WAV_HEADER_BYTES - 8 + data_bytes
    block_align = channels * BYTES_PER_SAMPLE
    return _HEADER.pack(
        b"RIFF", riff_bytes, b"WAVE",
        b"fmt ", 16, 1, channels, sample_rate, sample_rate * block_align, block_align, 16,
        b"data", data_bytes,
    )  # fmt: skip
