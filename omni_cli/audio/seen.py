"""Input images for a program that sees: a PNG or JPEG file (or its bytes), decoded by Pillow to RGB pixels."""

from __future__ import annotations

import io
from dataclasses import dataclass

import numpy as np

FORMATS = ("PNG", "JPEG")
MAX_PIXELS = 50_000_000  # a larger picture is refused before it is decoded (the encoder would shrink it anyway)


class ImageInputError(ValueError):
    """An input image that cannot be seen (a missing file, not a PNG or JPEG, truncated, too large)."""


@dataclass(frozen=True)
class SeenImage:
    """One picture: uint8 RGB pixels [height, width, 3], and where it came from (for messages)."""

    pixels: np.ndarray
    name: str
    kind = "image"  # beside audio.watched.SeenVideo's "video": what the image encoder is handed

    @property
    def size(self) -> tuple[int, int]:
        return int(self.pixels.shape[1]), int(self.pixels.shape[0])  # (width, height), as Pillow says it


def open_input(path: str, error: type[ValueError], noun: str):
    """`path` opened for reading, or `error` in one line saying why not (`noun`: "an image", "a video")."""
    try:
        return open(path, "rb")
    except FileNotFoundError:
        raise error(f"{path}: no such file") from None
    except IsADirectoryError:
        raise error(f"{path}: is a directory, not {noun}") from None
    except OSError as exc:
        raise error(f"{path}: cannot read it ({exc.strerror or exc})") from None


def read_image(path: str) -> SeenImage:
    """A PNG or JPEG file as RGB pixels (an alpha channel is dropped, a palette or grey image expanded)."""
    with open_input(path, ImageInputError, "an image") as f:
        try:
            raw = f.read()
        except OSError as exc:
            raise ImageInputError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    return read_image_bytes(raw, path)


def read_image_bytes(raw: bytes, where: str = "the image") -> SeenImage:
    """A whole PNG or JPEG held in memory (a file's bytes, an HTTP body's data URL)."""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(raw)) as img:
            if img.format not in FORMATS:
                raise ImageInputError(f"{where}: a {img.format} image; PNG and JPEG are read")
            width, height = img.size
            if width * height > MAX_PIXELS or not width or not height:
                raise ImageInputError(f"{where}: {width}x{height} pixels; at most {MAX_PIXELS:,} are read")
            pixels = np.asarray(img.convert("RGB"), dtype=np.uint8)
    except UnidentifiedImageError:
        raise ImageInputError(f"{where}: not a PNG or JPEG image") from None
    except (OSError, SyntaxError, ValueError, Image.DecompressionBombError) as exc:
        if isinstance(exc, ImageInputError):
            raise
        raise ImageInputError(f"{where}: cannot decode it ({str(exc).strip() or type(exc).__name__})") from None
    return SeenImage(pixels, where)
