"""The numpy image encoder: a picture scaled to a grid of patches, a small transformer over them all; a video as
its sampled frames, each group of `temporal_patch` averaged and seen as a picture."""

from __future__ import annotations

import numpy as np

from ...audio.watched import sample_indices
from ..base import IMAGE, ImageEncoderModel, ImageInput, ImageRows
from .nn import KeptRows, WeightSource, linear, rms_norm, silu, softmax
from .params import ImageEncoderParams


class NumpyImageEncoder(KeptRows, ImageEncoderModel):
    """RGB pixels -> `patch_size` squares (the picture scaled, nearest pixel, to at most `max_grid` patches a side)
    -> patch embedding plus row and column positions -> layers in which every patch sees the whole picture ->
    the thinker's width. One row per patch, in row-major order: grid (1, rows, columns)."""

    role = "image_encoder"

    def __init__(self, name: str, params: ImageEncoderParams, seed: int, thinker_width: int):
        self.name = name
        self.patch_size, self.max_grid = params.patch_size, params.max_grid
        self.max_images = params.max_images
        self.fps, self.temporal_patch, self.max_frames = params.fps, params.temporal_patch, params.max_frames
        self.d_model, self.num_heads = params.d_model, params.num_heads
        ws = WeightSource(seed, 7)
        d = params.d_model
        self.patch_in = ws.matrix(3 * params.patch_size ** 2, d, scale=2.0)
        self.row_pos = ws.table(params.max_grid, d, scale=0.1)
        self.col_pos = ws.table(params.max_grid, d, scale=0.1)
        self.layers = [
            {"norm1": ws.ones(d), "qkv": ws.matrix(d, 3 * d), "out": ws.matrix(d, d),
             "norm2": ws.ones(d), "up": ws.matrix(d, 2 * d), "down": ws.matrix(2 * d, d)}
            for _ in range(params.num_layers)
        ]
        self.final_norm = ws.ones(d)
        self.proj = ws.matrix(d, thinker_width, scale=0.5)
        self._params = params

    # resources
    def weight_bytes(self) -> int:
        return sum(a.nbytes for a in self._arrays())

    def _arrays(self) -> list[np.ndarray]:
        arrays = [self.patch_in, self.row_pos, self.col_pos, self.final_norm, self.proj]
        return arrays + [w for layer in self.layers for w in layer.values()]

    def rows_for(self, width: int, height: int) -> tuple[int, int, int]:
        side = lambda n: min(self.max_grid, max(1, round(n / self.patch_size)))  # noqa: E731
        return 1, side(height), side(width)

    def max_rows(self) -> int:
        return self.max_grid * self.max_grid

    def step_bytes(self, width: int, height: int) -> int:
        _, h, w = self.rows_for(width, height)
        n = h * w
        return 4 * (width * height * 3 + n * 3 * self.patch_size ** 2 + 6 * n * self.d_model + self.num_heads * n * n)

    def sampled(self, num_frames: int, fps: float) -> list[int]:
        tp = self.temporal_patch
        return sample_indices(num_frames, fps, self.fps, tp, tp, self.max_frames) or list(range(num_frames))

    def video_rows(self, width: int, height: int, num_frames: int, fps: float) -> int:
        _, h, w = self.rows_for(width, height)
        return -(-len(self.sampled(num_frames, fps)) // self.temporal_patch) * h * w

    def video_step_bytes(self, width: int, height: int, num_frames: int, fps: float) -> int:
        groups = -(-len(self.sampled(num_frames, fps)) // self.temporal_patch)
        return 4 * width * height * 3 * num_frames + groups * self.step_bytes(width, height)

    # work
    def run(self, kind: str, inputs: list[ImageInput]) -> list[ImageRows]:
        if kind != IMAGE:
            raise ValueError(f"image encoder cannot run {kind!r}")
        return [self.watch(i.image) if i.image.kind == "video" else self.encode(i.image.pixels) for i in inputs]

    def watch(self, video) -> ImageRows:
        """Each group of `temporal_patch` sampled frames (the last one repeated to fill it) averaged and encoded as
        a picture; the groups' rows one after another, grid (groups, h, w)."""
        frames = video.frames[self.sampled(video.num_frames, video.fps)]
        if pad := -len(frames) % self.temporal_patch:
            frames = np.concatenate([frames, np.repeat(frames[-1:], pad, axis=0)])
        groups = frames.reshape(-1, self.temporal_patch, *frames.shape[1:]).astype(np.float32).mean(axis=1)
        encoded = [self.encode(np.rint(g).astype(np.uint8)) for g in groups]
        _, h, w = encoded[0].grid
        return ImageRows(np.concatenate([e.rows for e in encoded]), (len(encoded), h, w), self.temporal_patch / self.fps)

    def encode(self, pixels: np.ndarray) -> ImageRows:
        height, width = pixels.shape[:2]
        t, h, w = self.rows_for(width, height)
        p = self.patch_size
        ys = (np.arange(h * p) * height) // (h * p)  # nearest source pixel of each scaled row and column
        xs = (np.arange(w * p) * width) // (w * p)
        scaled = pixels[ys][:, xs].astype(np.float32) / np.float32(127.5) - np.float32(1.0)
        patches = scaled.reshape(h, p, w, p, 3).transpose(0, 2, 1, 3, 4).reshape(h * w, 3 * p * p)
        x = silu(linear(patches, self.patch_in))
        x = x + (self.row_pos[:h, None] + self.col_pos[None, :w]).reshape(h * w, self.d_model)
        for layer in self.layers:
            x = x + linear(self._attend(rms_norm(x, layer["norm1"]), layer), layer["out"])
            x = x + linear(silu(linear(rms_norm(x, layer["norm2"]), layer["up"])), layer["down"])
        return ImageRows(linear(rms_norm(x, self.final_norm), self.proj), (t, h, w))

    def _attend(self, x: np.ndarray, layer: dict) -> np.ndarray:
        n, dh = x.shape[0], self.d_model // self.num_heads
        heads = linear(x, layer["qkv"]).reshape(n, 3, self.num_heads, dh).transpose(1, 2, 0, 3)
        scores = np.matmul(heads[0], heads[1].transpose(0, 2, 1)) * np.float32(1.0 / np.sqrt(dh))
        out = np.matmul(softmax(scores), heads[2])  # every patch sees the whole picture
        return out.transpose(1, 0, 2).reshape(n, self.d_model)
