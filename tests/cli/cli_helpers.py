"""Helpers for the CLI tests: WAV parsing that checks headers, stderr lines, a subprocess environment."""

from __future__ import annotations

import os
import struct
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
LONG_TEXT = " ".join(["word"] * 130)  # 649 characters: some 4 s of engine time, 40 s of audio in 200-odd chunks


def proc_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMNI_", "PYTEST_"))}
    env.update(PYTHONPATH=str(ROOT), HOME=str(home), PYTHONUNBUFFERED="0", COLUMNS="100",
               OMNI_CARD="qwen2_5_omni_toy")  # the runtime's card; tests/piper/ runs the default voice
    return env


def read_wav(path) -> tuple[int, np.ndarray]:
    """(sample rate, int16 samples) of a 16-bit mono WAV, checking the header against the file."""
    data = Path(path).read_bytes()
    return parse_wav(data, expect_sizes=True)


def parse_wav(data: bytes, expect_sizes: bool = False) -> tuple[int, np.ndarray]:
    riff, riff_size, wave, fmt, fmt_size, tag, channels, rate, _, align, bits, chunk, size = struct.unpack(
        "<4sI4s4sIHHIIHH4sI", data[:44])
    assert (riff, wave, fmt, chunk) == (b"RIFF", b"WAVE", b"fmt ", b"data")
    assert (tag, channels, align, bits) == (1, 1, 2, 16)
    if expect_sizes:
        assert size <= len(data) - 44 and riff_size == 36 + size
        body = data[44:44 + size]
    else:  # a stream: sizes unknown, data to the end
        assert size == riff_size == 0xFFFFFFFF
        body = data[44:]
    assert len(body) % 2 == 0
    return rate, np.frombuffer(body, "<i2")


def stderr_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]
