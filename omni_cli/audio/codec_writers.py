"""MP3, Ogg/Opus (libsndfile) and AAC (PyAV) written chunk by chunk: to a file (headers completed at close) or a stream."""

from __future__ import annotations

import os
from typing import BinaryIO

import numpy as np

from .base import AudioWriter
from .errors import AudioOutputError
from .pcm import PCM16_SCALE
from .stream_encoder import StreamEncoder
from .streams import _StreamWriter

_OPEN_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_BINARY", 0)
CODEC_FORMATS = ("mp3", "opus", "aac")


def _errors() -> tuple[type[BaseException], ...]:
    import soundfile

    # RuntimeError includes AacUnavailableError (no PyAV: the message names the extra)
    errors: tuple[type[BaseException], ...] = (soundfile.SoundFileError, RuntimeError, OSError, ValueError)
    try:
        import av

        errors += (av.FFmpegError,)
    except ImportError:
        pass
    return errors


class CodecFileWriter(AudioWriter):
    """MP3, Ogg/Opus or AAC to a seekable path, encoded as chunks arrive (resampled to a rate the codec carries).

    Like FlacFileWriter, the file is complete at `close()`: libsndfile then writes the encoder's last
    frames and completes its headers (MP3's Info frame with the exact length); a file read mid-run, or
    left by a killed run, lacks them.
    """

    def __init__(self, path: str | os.PathLike, sample_rate: int, fmt: str) -> None:
        super().__init__(os.fspath(path), sample_rate, 1)
        try:
            fd = os.open(path, _OPEN_FLAGS, 0o666)
        except OSError as e:
            raise AudioOutputError.from_os_error(self.target_name, e) from e
        self._stream = os.fdopen(fd, "w+b")
        try:
            self._encoder = StreamEncoder(fmt, sample_rate, file=self._stream)
        except _errors() as e:
            self._stream.close()
            raise AudioOutputError(self.target_name, str(e)) from e

    def _write_pcm(self, pcm: np.ndarray) -> None:
        try:
            self._encoder.encode(pcm.astype(np.float32) / PCM16_SCALE)
        except _errors() as e:
            raise AudioOutputError(self.target_name, str(e)) from e

    def _close(self) -> None:
        try:
            self._encoder.finish()
            self._stream.close()
        except _errors() as e:
            raise AudioOutputError(self.target_name, str(e)) from e


class CodecStreamWriter(_StreamWriter):
    """MP3, Ogg/Opus or AAC to a pipe or stdout: each chunk's bytes go out as the encoder makes them."""

    def __init__(self, stream: BinaryIO, sample_rate: int, fmt: str, *, close_stream: bool = False) -> None:
        super().__init__(stream, sample_rate, 1, close_stream=close_stream)
        try:
            self._encoder = StreamEncoder(fmt, sample_rate)
        except _errors() as e:
            raise AudioOutputError(self.target_name, str(e)) from e

    def _write_pcm(self, pcm: np.ndarray) -> None:
        data = self._encoder.encode(pcm.astype(np.float32) / PCM16_SCALE)
        if data:
            self._send(data)

    def _close(self) -> None:
        try:
            if not self._reader_gone:
                self._send(self._encoder.finish())
        finally:
            self._encoder.close()
            super()._close()
