"""Writers for pipes and other binary streams: WAV with an unknown-length header, or raw PCM."""

from __future__ import annotations

from typing import BinaryIO

import numpy as np

from .base import AudioWriter, stream_name
from .errors import AudioOutputError, OutputClosed
from .pcm import UNKNOWN_SIZE, wav_header


class _StreamWriter(AudioWriter):
    """Writes bytes to a binary stream and flushes after each chunk.

    The stream is the caller's (stdout, a pipe) and is left open by `close()`, unless
    `close_stream=True`. A reader that closed the pipe surfaces as OutputClosed; any other
    OSError as AudioOutputError.
    """

    def __init__(
        self, stream: BinaryIO, sample_rate: int, channels: int = 1, *, close_stream: bool = False
    ) -> None:
        super().__init__(stream_name(stream), sample_rate, channels)
        self._stream = stream
        self._close_stream = close_stream
        self._reader_gone = False

    def _send(self, data: bytes) -> None:
        try:
            view = memoryview(data)
            while view:
                written = self._stream.write(view)
                # buffered streams take everything (and may return None); raw ones may not
                if written is None or written >= len(view):
                    break
                view = view[written:]
            self._stream.flush()
        except BrokenPipeError as e:
            self._reader_gone = True
            raise OutputClosed(self.target_name) from e
        except OSError as e:
            raise AudioOutputError.from_os_error(self.target_name, e) from e

    def _write_pcm(self, pcm: np.ndarray) -> None:
        self._send(pcm.tobytes())

    def _close(self) -> None:
        try:
            if not self._reader_gone:
                self._send(b"")
        finally:
            if self._close_stream:
                try:
                    self._stream.close()
                except OSError:
                    pass  # a pipe whose reader left refuses the final flush; nothing is lost


class WavStreamWriter(_StreamWriter):
    """16-bit PCM WAV to a non-seekable stream.

    The header is written once, at construction, with RIFF and `data` sizes 0xFFFFFFFF
    ("unknown length", as ffmpeg writes to pipes); readers take the data up to end of stream.
    """

    def __init__(
        self, stream: BinaryIO, sample_rate: int, channels: int = 1, *, close_stream: bool = False
    ) -> None:
        super().__init__(stream, sample_rate, channels, close_stream=close_stream)
        self._send(wav_header(self.sample_rate, self.channels, UNKNOWN_SIZE))


class RawPcmWriter(_StreamWriter):
    """Headerless signed 16-bit little-endian PCM (s16le), frames interleaved."""
