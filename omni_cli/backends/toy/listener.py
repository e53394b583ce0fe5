"""The numpy audio encoder: a random filterbank, then a small transformer that attends within each block."""

from __future__ import annotations

import math

import numpy as np

from ..base import AUDIO_BLOCK, AudioBlockInput, AudioBlockOutput, AudioEncoderModel
from .nn import KeptRows, WeightSource, linear, rms_norm, silu, softmax
from .params import AudioEncoderParams

_ENERGY_FLOOR = np.float32(1e-6)  # a fixed floor (not the clip's own maximum): any prefix is final


class NumpyAudioEncoder(KeptRows, AudioEncoderModel):
    """Frames of `frame_samples` -> log band energies -> frame pairs -> layers within a block -> pooled pairs ->
    the thinker's width. A full block of `block_frames` frames makes block_frames / 4 positions; every row is
    computed alone (nn.linear), so a block encoded as it arrives equals the whole clip encoded at once, bit for bit."""

    role = "audio_encoder"

    def __init__(self, name: str, params: AudioEncoderParams, seed: int, thinker_width: int):
        self.name = name
        self.sample_rate = params.sample_rate
        self.frame_samples = params.frame_samples
        self.block_frames = params.block_frames
        self.block_samples = params.block_frames * params.frame_samples
        self.max_samples = int(params.max_seconds * params.sample_rate)
        self.num_bands, self.d_model, self.num_heads = params.num_bands, params.d_model, params.num_heads
        ws = WeightSource(seed, 5)
        d = params.d_model
        self.filters = ws.matrix(params.frame_samples, 2 * params.num_bands, scale=4.0)
        self.pair_in = ws.matrix(2 * params.num_bands, d, scale=0.5)
        self.positions = ws.table(params.block_frames // 2, d, scale=0.1)
        self.layers = [
            {"norm1": ws.ones(d), "qkv": ws.matrix(d, 3 * d), "out": ws.matrix(d, d),
             "norm2": ws.ones(d), "up": ws.matrix(d, 2 * d), "down": ws.matrix(2 * d, d)}
            for _ in range(params.num_layers)
        ]
        self.final_norm = ws.ones(d)
        self.proj = ws.matrix(d, thinker_width, scale=0.5)
        self.thinker_width = thinker_width
        self._params = params

    # resources
    def weight_bytes(self) -> int:
        return sum(a.nbytes for a in self._arrays())

    def _arrays(self) -> list[np.ndarray]:
        arrays = [self.filters, self.pair_in, self.positions, self.final_norm, self.proj]
        return arrays + [w for layer in self.layers for w in layer.values()]

    def new_state(self) -> None:
        return None  # blocks need nothing from each other

    def step_bytes(self, num_samples: int) -> int:
        frames = num_samples // self.frame_samples
        n = (frames + 1) // 2
        return 4 * (num_samples + 4 * frames * self.num_bands + 6 * n * self.d_model + self.num_heads * n * n)

    def tokens_for(self, num_samples: int) -> int:
        full, rest = divmod(num_samples, self.block_samples)
        return full * (self.block_frames // 4) + math.ceil(rest // self.frame_samples / 2) // 2

    # work
    def run(self, kind: str, inputs: list[AudioBlockInput]) -> list[AudioBlockOutput]:
        if kind != AUDIO_BLOCK:
            raise ValueError(f"audio encoder cannot run {kind!r}")
        outputs = []
        for i in inputs:
            samples = i.source.read(self.sample_rate, i.start, i.stop)  # waits for audio still on its way
            outputs.append(AudioBlockOutput(self.encode_block(self.features(samples)), len(samples)))
        return outputs

    def encode_whole(self, samples: np.ndarray) -> np.ndarray:
        """The whole clip at once: every frame's features in one call, then each block (the reference)."""
        feats = self.features(samples)
        blocks = [feats[k:k + self.block_frames] for k in range(0, len(feats), self.block_frames)]
        rows = [self.encode_block(b) for b in blocks]
        return np.concatenate(rows) if rows else np.zeros((0, self.thinker_width), np.float32)

    def features(self, samples: np.ndarray) -> np.ndarray:
        """[frames, bands] log energies; a tail shorter than a frame is dropped (as Whisper's mask does)."""
        frames = len(samples) // self.frame_samples
        x = np.asarray(samples[:frames * self.frame_samples], np.float32).reshape(frames, self.frame_samples)
        f = linear(x, self.filters) if frames else np.zeros((0, 2 * self.num_bands), np.float32)
        energy = f[:, :self.num_bands] ** 2 + f[:, self.num_bands:] ** 2
        return np.log(energy + _ENERGY_FLOOR)

    def encode_block(self, feats: np.ndarray) -> np.ndarray:
        """One block's [frames, bands] features -> [frames / 4 rounded as the tail rule says, thinker width]."""
        if len(feats) < 3:
            return np.zeros((0, self.thinker_width), np.float32)
        if len(feats) % 2:
            feats = np.concatenate([feats, np.zeros((1, self.num_bands), np.float32)])
        pairs = feats.reshape(-1, 2 * self.num_bands)
        h = silu(linear(pairs, self.pair_in)) + self.positions[:len(pairs)]
        for layer in self.layers:
            h = h + linear(self._attend(rms_norm(h, layer["norm1"]), layer), layer["out"])
            h = h + linear(silu(linear(rms_norm(h, layer["norm2"]), layer["up"])), layer["down"])
        n = len(h) // 2
        pooled = (h[0:2 * n:2] + h[1:2 * n:2]) * np.float32(0.5)
        return linear(rms_norm(pooled, self.final_norm), self.proj)

    def _attend(self, x: np.ndarray, layer: dict) -> np.ndarray:
        n, dh = x.shape[0], self.d_model // self.num_heads
        heads = linear(x, layer["qkv"]).reshape(n, 3, self.num_heads, dh).transpose(1, 2, 0, 3)
        scores = np.matmul(heads[0], heads[1].transpose(0, 2, 1)) * np.float32(1.0 / np.sqrt(dh))
        out = np.matmul(softmax(scores), heads[2])  # every frame pair sees its whole block, nothing outside it
        return out.transpose(1, 0, 2).reshape(n, self.d_model)
