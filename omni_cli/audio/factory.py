"""Pick the audio writer for a target: a path (by suffix or format) or a binary stream."""

from __future__ import annotations

import os
from pathlib import Path
from typing import BinaryIO, Literal

from .base import AudioWriter, stream_name
from .codec_writers import CODEC_FORMATS, CodecFileWriter, CodecStreamWriter
from .errors import AudioOutputError
from .flac_file import FlacFileWriter
from .streams import RawPcmWriter, WavStreamWriter
from .wav_file import WavFileWriter

AudioFormat = Literal["wav", "raw", "flac", "mp3", "opus", "aac"]
FORMATS: tuple[str, ...] = ("aac", "flac", "mp3", "opus", "raw", "wav")
SUFFIX_FORMATS: dict[str, str] = {".aac": "aac", ".flac": "flac", ".mp3": "mp3", ".opus": "opus", ".pcm": "raw",
                                  ".raw": "raw", ".wav": "wav"}


def open_audio_output(
    target: str | os.PathLike | BinaryIO,
    sample_rate: int,
    format: AudioFormat | None = None,
    *,
    channels: int = 1,
) -> AudioWriter:
    """Open the writer for `target`.

    A path gives WavFileWriter (header valid after every chunk), FlacFileWriter or CodecFileWriter
    (MP3, Ogg/Opus, AAC in ADTS; headers finalised at close) or raw s16le PCM to the file; with `format=None`
    the suffix decides (.wav, .flac, .mp3, .opus, .aac, .raw, .pcm; any case). A binary stream gives
    WavStreamWriter (default), RawPcmWriter or CodecStreamWriter (MP3, Opus, AAC); FLAC needs a path. "-" is an ordinary file name here: mapping it to stdout
    is the CLI's job. Unknown formats and suffixes are AudioOutputError.
    """
    is_path = isinstance(target, (str, os.PathLike))
    name = os.fspath(target) if is_path else stream_name(target)
    if format is not None and format not in FORMATS:
        supported = ", ".join(FORMATS)
        raise AudioOutputError(name, f"unknown audio format {format!r} (supported: {supported})")
    if not is_path:
        return _open_stream(target, name, sample_rate, format or "wav", channels)
    fmt = format or _format_from_suffix(Path(target))
    if fmt == "wav":
        return WavFileWriter(target, sample_rate, channels)
    if fmt == "flac":
        return FlacFileWriter(target, sample_rate, channels)
    if fmt in CODEC_FORMATS:
        return CodecFileWriter(target, sample_rate, fmt)
    try:
        stream = open(target, "wb")  # noqa: SIM115 - the writer owns and closes it
    except OSError as e:
        raise AudioOutputError.from_os_error(name, e) from e
    return RawPcmWriter(stream, sample_rate, channels, close_stream=True)


def _format_from_suffix(path: Path) -> str:
    fmt = SUFFIX_FORMATS.get(path.suffix.lower())
    if fmt is None:
        suffix = repr(path.suffix) if path.suffix else "no suffix"
        supported = ", ".join(SUFFIX_FORMATS)
        reason = f"unknown audio file suffix {suffix} (supported: {supported}; or pass a format)"
        raise AudioOutputError(path, reason)
    return fmt


def _open_stream(
    stream: BinaryIO, name: str, sample_rate: int, fmt: str, channels: int
) -> AudioWriter:
    if fmt == "flac":
        reason = "FLAC needs a file path (its header is written at close); use wav or raw"
        raise AudioOutputError(name, reason)
    if fmt == "raw":
        return RawPcmWriter(stream, sample_rate, channels)
    if fmt in CODEC_FORMATS:
        return CodecStreamWriter(stream, sample_rate, fmt)
    return WavStreamWriter(stream, sample_rate, channels)
