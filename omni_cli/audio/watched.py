"""Input videos for a program that sees: a video file's frames, decoded by PyAV to RGB pixels, and the frames an
encoder samples from them at its processor's rate."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .seen import open_input

MAX_BYTES = 1 << 30  # decoded RGB frames held for one video; a longer or larger one is refused


class VideoInputError(ValueError):
    """An input video that cannot be watched (a missing file, not a video, unreadable, no frames, too large)."""


@dataclass(frozen=True)
class SeenVideo:
    """One video: every decoded frame as uint8 RGB [frames, height, width, 3], its frame rate (frames a second),
    and where it came from (for messages)."""

    frames: np.ndarray
    fps: float
    name: str
    kind = "video"  # beside audio.seen.SeenImage's "image"

    @property
    def size(self) -> tuple[int, int]:
        return int(self.frames.shape[2]), int(self.frames.shape[1])  # (width, height), as a picture's

    @property
    def num_frames(self) -> int:
        return int(self.frames.shape[0])


def read_video(path: str) -> SeenVideo:
    """A video file's first video stream, every frame decoded to RGB (its audio track is not read)."""
    try:
        import av
    except ImportError:
        raise VideoInputError("reading a video needs PyAV: pip install 'omni-cli[hf]' (or [serve])") from None
    open_input(path, VideoInputError, "a video").close()  # a missing file or a folder, said plainly
    try:
        with av.open(path) as container:
            if not container.streams.video:
                raise VideoInputError(f"{path}: has no video stream")
            stream = container.streams.video[0]
            rate = stream.average_rate or stream.guessed_rate or stream.base_rate
            frames = _frames(container, stream, path)
    except VideoInputError:
        raise
    except (av.error.FFmpegError, OSError, ValueError, EOFError) as exc:
        said = getattr(exc, "strerror", None) or str(exc).strip() or type(exc).__name__  # PyAV's without errno
        raise VideoInputError(f"{path}: not a readable video ({said})") from None
    if not frames:
        raise VideoInputError(f"{path}: no frames")
    if not rate or float(rate) <= 0:
        raise VideoInputError(f"{path}: no frame rate")
    return SeenVideo(np.stack(frames), float(rate), path)


def _frames(container, stream, path: str) -> list[np.ndarray]:
    """Every frame of `stream` as RGB; an end of file met while decoding ends the stream there."""
    import av

    frames, held = [], 0
    try:
        for frame in container.decode(stream):
            pixels = frame.to_ndarray(format="rgb24")
            held += pixels.nbytes
            if held > MAX_BYTES:
                raise VideoInputError(f"{path}: over {MAX_BYTES >> 20} MiB of decoded frames; shorten or shrink it")
            frames.append(pixels)
    except av.error.EOFError:
        pass
    return frames


def sample_indices(num_frames: int, source_fps: float, fps: float, temporal_patch: int, min_frames: int,
                   max_frames: int) -> list[int]:
    """The frames a Qwen2-VL video processor samples at `fps` frames a second (its `sample_frames`): as many as
    the clip's duration gives at that rate, at least `min_frames`, at most `max_frames` and the clip's own, a
    multiple of `temporal_patch`, spread evenly from the first frame. Empty when fewer than `temporal_patch`."""
    most = math.floor(min(max_frames, num_frames) / temporal_patch) * temporal_patch
    wanted = num_frames / source_fps * fps
    count = math.floor(min(max(wanted, min_frames), most, num_frames) / temporal_patch) * temporal_patch
    if count <= 0:
        return []
    # torch.arange(0, n, n / count).int(), as the processor takes them: the length rounded up in double (so it
    # may be count + 1), each value stepped in double and held in float32
    step = num_frames / count
    length = math.ceil(num_frames / step)
    return [int(np.float32(i * step)) for i in range(length)]
