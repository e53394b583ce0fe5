"""Latent frames -> samples: the HiFi-GAN decoder on chunks of frames with context on each side."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..sentence_types import FrameChunkInput, FrameVocoder


class PiperDecoder(FrameVocoder):
    """Each frame makes `samples_per_frame` samples; a chunk's context frames are decoded and thrown away,
    so the samples at a chunk's edges see (almost) what they would see in one whole-sentence decode."""

    role = "vocoder"

    def __init__(self, name: str, session: Any, channels: int, samples_per_frame: int, sample_rate: int,
                 model_bytes: int, params: Any):
        self.name = name
        self.channels = channels
        self.samples_per_frame = samples_per_frame
        self.sample_rate = sample_rate
        self.chunk_frames = params.chunk_frames
        self.first_chunk_frames = params.first_chunk_frames
        self.context_frames = params.context_frames
        self.pause_samples = round(params.pause_s * sample_rate)
        self._session = session
        self._bytes = model_bytes
        self._input = session.get_inputs()[0].name

    def weight_bytes(self) -> int:
        return self._bytes

    def step_bytes(self, num_frames: int) -> int:
        # HiFi-GAN's widest activation: 256 channels at the first upsampling, 32 at the last; ~4x the output
        return 4 * 4 * num_frames * self.samples_per_frame * 8

    def chunk_size(self, index: int) -> int:
        """Frames in chunk `index` of a request: small first (early audio), doubling to chunk_frames
        (less context decoded twice per frame)."""
        return min(self.chunk_frames, self.first_chunk_frames << min(index, 16))

    def run(self, kind: str, inputs: list[FrameChunkInput]) -> list[Any]:
        out: list[Any] = [None] * len(inputs)
        by_width: dict[int, list[int]] = {}
        for i, item in enumerate(inputs):  # chunks of equal width run as one batch
            by_width.setdefault(item.frames.shape[1], []).append(i)
        hop = self.samples_per_frame
        for rows in by_width.values():
            batch = np.stack([inputs[i].frames for i in rows]).astype(np.float32, copy=False)
            wave = self._session.run(None, {self._input: batch})[0].reshape(len(rows), -1)
            for row, i in enumerate(rows):
                item = inputs[i]
                out[i] = np.ascontiguousarray(wave[row, item.keep_start * hop:item.keep_end * hop])
        return out
