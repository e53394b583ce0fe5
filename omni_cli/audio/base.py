"""What every audio writer shares: validation, sample counting, closing, the context manager."""

from __future__ import annotations

import operator

import numpy as np

from .errors import AudioOutputError, OutputClosed
from .pcm import float_to_pcm16


class AudioWriter:
    """Writes float32 chunks in [-1, 1] as they arrive; `num_samples` counts frames written."""

    def __init__(self, target_name: str, sample_rate: int, channels: int) -> None:
        sample_rate = operator.index(sample_rate)
        channels = operator.index(channels)
        if sample_rate <= 0:
            raise ValueError(f"sample_rate must be a positive number of Hz, got {sample_rate}")
        if channels <= 0:
            raise ValueError(f"channels must be positive, got {channels}")
        self.target_name = target_name
        self.sample_rate = sample_rate
        self.channels = channels
        self._num_samples = 0
        self._closed = False

    @property
    def num_samples(self) -> int:
        """Frames (samples per channel) fully written."""
        return self._num_samples

    @property
    def duration_s(self) -> float:
        return self._num_samples / self.sample_rate

    @property
    def closed(self) -> bool:
        return self._closed

    def write(self, samples: np.ndarray) -> None:
        """Append one chunk; raises AudioOutputError or OutputClosed, counting nothing then."""
        if self._closed:
            raise ValueError(f"write to a closed audio writer ({self.target_name})")
        pcm = float_to_pcm16(samples, self.channels)
        if pcm.shape[0] == 0:
            return
        self._write_pcm(pcm)
        self._num_samples += pcm.shape[0]

    def close(self) -> None:
        """Finish the output; closing twice is a no-op."""
        if self._closed:
            return
        self._closed = True
        self._close()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.close()
            return
        # the error in flight is the one to report, not a second one from closing
        try:
            self.close()
        except (AudioOutputError, OutputClosed):
            pass

    def _write_pcm(self, pcm: np.ndarray) -> None:
        raise NotImplementedError

    def _close(self) -> None:
        raise NotImplementedError


def stream_name(stream: object) -> str:
    """A printable name for a binary stream: its file name, `fd N`, or `<stream>`."""
    name = getattr(stream, "name", None)
    if isinstance(name, str):
        return name
    if isinstance(name, int):
        return f"fd {name}"
    return "<stream>"
