"""Latent frames -> samples: the HiFi-GAN decoder as a streaming graph that decodes every frame once."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..sentence_types import DecodedChunk, FrameChunkInput, FrameVocoder
from .stream_state import StreamSpec


class PiperDecoder(FrameVocoder):
    """Each frame makes `samples_per_frame` samples. The graph (streaming.py) keeps what each layer needs from
    a sentence's previous chunk in states handed back with the chunk's samples, so a chunk decodes only its own
    frames; its output lags by `stream.delay_samples`, which the sentence's last chunk flushes. The chunks'
    samples, put together, are the sentence's one-pass decode within float rounding."""

    role = "vocoder"
    context_frames = 0  # nothing decoded twice

    def __init__(self, name: str, session: Any, channels: int, samples_per_frame: int, sample_rate: int,
                 model_bytes: int, params: Any, stream: StreamSpec):
        self.name = name
        self.channels = channels
        self.samples_per_frame = samples_per_frame
        self.sample_rate = sample_rate
        self.chunk_frames = params.chunk_frames
        self.first_chunk_frames = params.first_chunk_frames
        self.pause_samples = round(params.pause_s * sample_rate)
        self.stream = stream
        self.frames_decoded = 0  # frames this decoder has run, over every request
        self._lead = stream.lead_frames
        self._session = session
        self._bytes = model_bytes
        self._input = session.get_inputs()[0].name

    def weight_bytes(self) -> int:
        return self._bytes

    def step_bytes(self, num_frames: int) -> int:
        # HiFi-GAN's widest activation: 256 channels at the first upsampling, 32 at the last; ~4x the output
        return 4 * 4 * (num_frames * self.samples_per_frame + self.stream.delay_samples) * 8

    def chunk_size(self, index: int) -> int:
        """Frames in chunk `index` of a request: small first (early audio), doubling to chunk_frames, and never
        fewer than the first chunk needs to emit a sample (the graph's lag)."""
        return max(self._lead, min(self.chunk_frames, self.first_chunk_frames << min(index, 16)))

    def run(self, kind: str, inputs: list[FrameChunkInput]) -> list[DecodedChunk]:
        out: list[Any] = [None] * len(inputs)
        groups: dict[tuple, list[int]] = {}
        for i, item in enumerate(inputs):  # chunks of equal width, equally first and last, run as one batch
            groups.setdefault((item.frames.shape[1], item.carry is None, item.last), []).append(i)
        for (width, first, last), rows in groups.items():
            batch = np.stack([inputs[i].frames for i in rows]).astype(np.float32, copy=False)
            states = self.stream.initial(len(rows)) if first else self.stream.stacked([inputs[i].carry for i in rows])
            flags = {"first": np.array([int(first)], np.int64), "last": np.array([int(last)], np.int64)}
            wave, *held = self._session.run(None, {self._input: batch, **flags, **states})
            wave = wave.reshape(len(rows), -1)
            self.frames_decoded += width * len(rows)
            for row, i in enumerate(rows):
                carry = None if last else self.stream.row(held, row)
                out[i] = DecodedChunk(np.ascontiguousarray(wave[row]), carry)
        return out
