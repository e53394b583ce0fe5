"""Sample-rate conversion, whole or chunk by chunk, through soxr (the SoX resampler): no hand-made filter."""

from __future__ import annotations

import numpy as np


class ChunkResampler:
    """Resamples a stream chunk by chunk; the chunks out, joined, equal resampling the whole stream at once
    (soxr keeps the filter's state between calls, so no chunk boundary is heard)."""

    def __init__(self, from_rate: int, to_rate: int):
        import soxr

        self._stream = soxr.ResampleStream(from_rate, to_rate, 1, dtype="float32", quality="HQ")

    def chunk(self, samples: np.ndarray) -> np.ndarray:
        return self._stream.resample_chunk(np.asarray(samples, np.float32), last=False)

    def flush(self) -> np.ndarray:
        """The filter's tail: call once, after the last chunk."""
        return self._stream.resample_chunk(np.zeros(0, np.float32), last=True)


def resample(samples: np.ndarray, from_rate: int, to_rate: int) -> np.ndarray:
    """The whole signal at `to_rate` (float32)."""
    if from_rate == to_rate:
        return np.asarray(samples, np.float32)
    import soxr

    return soxr.resample(np.asarray(samples, np.float32), from_rate, to_rate, quality="HQ").astype(np.float32)
