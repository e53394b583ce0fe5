"""The video half of Qwen2.5-Omni's processor, for the vision tower: frames sampled at the processor's rate,
resized, normalised and cut into (temporal patch x patch x patch) patches in Qwen2VLVideoProcessor's order, with
the checkpoint's settings. transformers' own video processor needs torchvision; this is its arithmetic in torch
(the resize is the same torch operation torchvision runs for uint8 frames on a CPU)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from omni_cli.audio.watched import sample_indices
from omni_cli.backends.hf.listener import FEATURE_FILE, ListenerUnavailable

VIDEO_FILE = "video_preprocessor_config.json"  # the video processor's own settings, where a checkpoint has them
DEFAULT_FPS = 2.0  # Qwen2_5OmniProcessor's rate where the checkpoint states none (released checkpoints do not)
DEFAULT_FRAMES = (4, 768)  # Qwen2VLVideoProcessor's min_frames and max_frames where the checkpoint states none
BICUBIC = 3  # PIL's number for it: the video processor's resampling


@dataclass(frozen=True)
class VideoSettings:
    fps: float  # frames sampled a second
    min_frames: int
    max_frames: int
    temporal_patch: int  # frames per grid step
    patch: int
    merge: int
    min_pixels: int  # a frame's pixel bounds after the resize (the processor's video size)
    max_pixels: int
    mean: tuple[float, ...]
    std: tuple[float, ...]
    rescale_factor: float

    @property
    def seconds_per_step(self) -> float:
        """A grid step's duration: the processor's `temporal_patch_size / fps` (video_second_per_grid)."""
        return self.temporal_patch / self.fps


def video_settings(path: Path, image: dict) -> VideoSettings:
    """The video processor's settings: its own file's where the checkpoint has one, else preprocessor_config.json's
    (`image`: the image settings read from it, which hold the patch sizes, mean and std); the frame size bounds are
    the ones Qwen2_5OmniProcessor hands its video processor."""
    from transformers.models.qwen2_5_omni.processing_qwen2_5_omni import Qwen2_5OmniProcessor

    shared, own = (_read(path / name) for name in (FEATURE_FILE, VIDEO_FILE))
    config = {**shared, **image, **{k: v for k, v in own.items() if v is not None}}
    if config.get("do_rescale") is False or config.get("do_normalize") is False or \
            config.get("resample", BICUBIC) != BICUBIC:
        raise ListenerUnavailable(f"{path}: a video processor that does not resize bicubic, rescale and normalise "
                                  "is not supported")
    size = Qwen2_5OmniProcessor.videos_kwargs["size"]
    return VideoSettings(
        fps=float(config.get("fps") or DEFAULT_FPS),
        min_frames=int(config.get("min_frames") or DEFAULT_FRAMES[0]),
        max_frames=int(config.get("max_frames") or DEFAULT_FRAMES[1]),
        temporal_patch=int(config["temporal_patch_size"]), patch=int(config["patch_size"]),
        merge=int(config["merge_size"]), min_pixels=int(size["shortest_edge"]), max_pixels=int(size["longest_edge"]),
        mean=tuple(float(x) for x in config["image_mean"]), std=tuple(float(x) for x in config["image_std"]),
        rescale_factor=float(config.get("rescale_factor") or 1 / 255))


def _read(file: Path) -> dict:
    if not file.is_file():
        return {}
    try:
        return json.loads(file.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ListenerUnavailable(f"{file}: not readable JSON ({exc})") from None


def frame_size(width: int, height: int, s: VideoSettings) -> tuple[int, int]:
    """(height, width) of a frame after the processor's resize."""
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import smart_resize

    return smart_resize(height, width, factor=s.patch * s.merge, min_pixels=s.min_pixels, max_pixels=s.max_pixels)


def sampled(num_frames: int, source_fps: float, s: VideoSettings) -> list[int]:
    """The frames the processor samples; a video shorter than one temporal patch keeps all its frames (the last
    one repeats to fill the patch, as the processor pads)."""
    return sample_indices(num_frames, source_fps, s.fps, s.temporal_patch, s.min_frames, s.max_frames) or \
        list(range(num_frames))


def video_patches(frames: np.ndarray, s: VideoSettings) -> tuple[torch.Tensor, tuple[int, int, int]]:
    """uint8 RGB frames [n, H, W, 3] -> (pixel_values_videos [t * h * w, 3 * temporal * patch * patch],
    video_grid_thw (t, h, w) in patches), as Qwen2VLVideoProcessor makes them."""
    x = torch.from_numpy(np.ascontiguousarray(frames)).permute(0, 3, 1, 2).contiguous()  # [n, 3, H, W]
    height, width = frame_size(x.shape[3], x.shape[2], s)
    if (height, width) != tuple(x.shape[2:]):  # torchvision returns a frame already at its size untouched
        x = torch.nn.functional.interpolate(x, size=[height, width], mode="bicubic", align_corners=False,
                                            antialias=True)
    mean = torch.tensor(s.mean) * (1.0 / s.rescale_factor)  # rescale fused into normalise, as the processor does
    std = torch.tensor(s.std) * (1.0 / s.rescale_factor)
    x = (x.to(torch.float32) - mean.view(-1, 1, 1)) / std.view(-1, 1, 1)
    if pad := -x.shape[0] % s.temporal_patch:  # the last frame repeats to fill the last temporal patch
        x = torch.cat([x, x[-1:].expand(pad, -1, -1, -1)])
    t, gh, gw = x.shape[0] // s.temporal_patch, height // s.patch, width // s.patch
    p, m = s.patch, s.merge
    patches = x.reshape(1, t, s.temporal_patch, 3, gh // m, m, p, gw // m, m, p)
    patches = patches.permute(0, 1, 4, 7, 5, 8, 3, 2, 6, 9).reshape(t * gh * gw, 3 * s.temporal_patch * p * p)
    return patches, (t, gh, gw)
