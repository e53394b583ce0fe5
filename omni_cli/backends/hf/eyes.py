"""Qwen2.5-Omni's vision tower as an input loop's component: one picture (or one video) per WorkUnit, through the
checkpoint's image processor (Qwen2VLImageProcessor's settings in preprocessor_config.json: resize, normalise,
patches; a video through watch.py's video half).

A picture is not split into its attention windows: the tower's `fullatt_block_indexes` layers attend over every
patch of the picture, so a window encoded alone differs from the whole picture's rows for it. Pictures do not
attend to each other (the tower's cu_seqlens are per picture), so each one is its own WorkUnit.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch

from omni_cli.backends.base import IMAGE, ImageEncoderModel, ImageInput, ImageRows
from omni_cli.backends.hf import kept_rows
from omni_cli.backends.hf.ar import module_bytes
from omni_cli.backends.hf.listener import FEATURE_FILE, ListenerUnavailable
from omni_cli.backends.hf.loading import Loaded
from omni_cli.backends.hf.threads import Threads, choose_threads, with_threads
from omni_cli.backends.hf.watch import frame_size, sampled, video_patches, video_settings

# what seeing needs from preprocessor_config.json (the processor's image half), and what it may say besides
NEEDED = ("patch_size", "merge_size", "temporal_patch_size", "min_pixels", "max_pixels", "image_mean", "image_std")
OPTIONAL = ("resample", "rescale_factor", "do_resize", "do_rescale", "do_normalize", "do_convert_rgb")
MAX_IMAGES = 16  # pictures one request may carry


class HFImageEncoder(ImageEncoderModel):
    """Pixels -> the processor's patches -> the vision tower (patch embedding, window and full attention, the
    merger) -> rows at the thinker's width, grid (t, h / merge, w / merge) in row-major order, as generate
    places them."""

    role = "image_encoder"

    def __init__(self, loaded: Loaded, model_path: str, name: str = "image_encoder", threads: Threads | None = None,
                 num_threads: int = 0):
        self.name = name
        self.threads = threads or choose_threads(num_threads, 0)
        self.tower = loaded.model.thinker.model.visual
        self.device, self.dtype = loaded.device, loaded.dtype
        settings = image_settings(Path(model_path).expanduser())
        tower = self.tower.config
        for key, ours in (("patch_size", "patch_size"), ("merge_size", "spatial_merge_size"),
                          ("temporal_patch_size", "temporal_patch_size")):
            if int(settings[key]) != int(getattr(tower, ours)):
                raise ListenerUnavailable(f"{FEATURE_FILE} says {key} {settings[key]}, the vision tower's "
                                          f"{ours} is {getattr(tower, ours)}")
        from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

        self.processor = Qwen2VLImageProcessorPil(**settings)
        self.merge = int(tower.spatial_merge_size)
        self.factor = int(tower.patch_size) * self.merge  # a side's pixels are a multiple of this
        self.min_pixels, self.max_pixels = int(settings["min_pixels"]), int(settings["max_pixels"])
        self.max_images = MAX_IMAGES
        self.video = video_settings(Path(model_path).expanduser(), settings)
        self.model_path, self.settings, self._identity = model_path, settings, None

    # resources
    def weight_bytes(self) -> int:
        return module_bytes(self.tower)

    def rows_for(self, width: int, height: int) -> tuple[int, int, int]:
        from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import smart_resize

        h, w = smart_resize(height, width, factor=self.factor, min_pixels=self.min_pixels, max_pixels=self.max_pixels)
        return 1, h // self.factor, w // self.factor

    def max_rows(self) -> int:
        return self.max_pixels // (self.factor * self.factor)

    def step_bytes(self, width: int, height: int) -> int:
        _, h, w = self.rows_for(width, height)
        patches = h * w * self.merge * self.merge
        width_ = int(self.tower.config.hidden_size)
        return 4 * (3 * width * height + patches * (3 * 2 * 14 * 14 + 8 * width_)) + 4 * patches * patches

    def video_grid(self, width: int, height: int, num_frames: int, fps: float) -> tuple[int, int, int]:
        """The grid (t, h, w) of thinker positions a video becomes: its sampled frames in temporal patches."""
        s = self.video
        h, w = frame_size(width, height, s)
        frames = len(sampled(num_frames, fps, s))
        return -(-frames // s.temporal_patch), h // self.factor, w // self.factor

    def video_rows(self, width: int, height: int, num_frames: int, fps: float) -> int:
        return int(np.prod(self.video_grid(width, height, num_frames, fps)))

    def video_step_bytes(self, width: int, height: int, num_frames: int, fps: float) -> int:
        t, h, w = self.video_grid(width, height, num_frames, fps)
        patches = h * w * self.merge * self.merge  # a temporal group attends only within itself
        width_ = int(self.tower.config.hidden_size)
        per_group = patches * (3 * self.video.temporal_patch * 14 * 14 + 8 * width_) + patches * patches
        return 4 * (3 * width * height * num_frames + t * per_group)

    # rows kept across runs
    def identity(self) -> dict:
        if self._identity is None:
            self._identity = kept_rows.tower_identity(self, self.tower, self.model_path, self.settings)
        return self._identity

    def rows_to_numpy(self, rows: torch.Tensor):
        return kept_rows.rows_to_numpy(rows)

    def rows_from_numpy(self, array) -> torch.Tensor:
        return kept_rows.rows_from_numpy(array, self.device, self.dtype)

    # work
    @with_threads
    @torch.no_grad()
    def run(self, kind: str, inputs: list[ImageInput]) -> list[ImageRows]:
        if kind != IMAGE:
            raise ValueError(f"the image encoder runs image WorkUnits, not {kind!r}")
        return [self.watch(i.image) if i.image.kind == "video" else self.encode(i.image.pixels) for i in inputs]

    def watch(self, video) -> ImageRows:
        """A video (audio.watched.SeenVideo): its sampled frames through the video processor's arithmetic, then
        the tower; the grid's time steps are `temporal_patch_size / fps` seconds apart."""
        s = self.video
        patches, grid = video_patches(video.frames[sampled(video.num_frames, video.fps, s)], s)
        rows = self.tower(patches.to(self.device, self.dtype), grid_thw=torch.tensor([grid], device=self.device))
        t, h, w = grid
        return ImageRows(rows.pooler_output, (t, h // self.merge, w // self.merge), s.seconds_per_step)

    def encode(self, pixels) -> ImageRows:
        batch = self.processor(images=[pixels], return_tensors="pt")
        grid = batch["image_grid_thw"].to(self.device)
        rows = self.tower(batch["pixel_values"].to(self.device, self.dtype), grid_thw=grid).pooler_output
        t, h, w = (int(x) for x in grid[0])
        return ImageRows(rows, (t, h // self.merge, w // self.merge))


def image_settings(path: Path) -> dict:
    """The image processor's settings from the checkpoint's preprocessor_config.json; refused in one line naming
    what is missing."""
    file = path / FEATURE_FILE
    if not file.is_file():
        raise ListenerUnavailable(f"{path} has no {FEATURE_FILE}: the image encoder needs the checkpoint's image "
                                  "processor (Qwen2VLImageProcessor) to see")
    try:
        config = json.loads(file.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ListenerUnavailable(f"{file}: not readable JSON ({exc})") from None
    if "size" in config and isinstance(config["size"], dict):  # the newer spelling of the pixel bounds
        config.setdefault("min_pixels", config["size"].get("shortest_edge"))
        config.setdefault("max_pixels", config["size"].get("longest_edge"))
    missing = [key for key in NEEDED if config.get(key) is None]
    if missing:
        raise ListenerUnavailable(f"{file} has no {', '.join(missing)}: the image encoder needs the image "
                                  "processor's settings (Qwen2VLImageProcessor) to see")
    return {key: config[key] for key in (*NEEDED, *OPTIONAL) if config.get(key) is not None}
