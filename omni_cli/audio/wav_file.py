"""A 16-bit PCM WAV file whose header is valid after every chunk, even if the run is killed."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import numpy as np

from .base import AudioWriter
from .errors import AudioOutputError
from .pcm import MAX_WAV_DATA_BYTES, WAV_HEADER_BYTES, wav_header
from .publish import open_published


class WavFileWriter(AudioWriter):
    """Streaming WAV writer for a seekable path (16-bit PCM, little-endian).

    Each `write` appends the PCM data first, then rewrites the 44-byte header in place (RIFF
    and `data` sizes) in one write, so the header never claims a sample that is not on disk.
    All writes are `os.write` on a raw file descriptor: no Python buffer holds samples back, so
    another process (soundfile, sox) reading mid-run sees every chunk written so far, and a
    SIGKILL leaves a readable file of whole chunks. There is no fsync: the data survives the
    process, not a power cut. If a write fails (disk full), the partial chunk is cut off and
    the file still holds exactly the chunks written before it.

    The parent directory is not created: a missing or unwritable one is an AudioOutputError.
    """

    def __init__(self, path: str | os.PathLike, sample_rate: int, channels: int = 1) -> None:
        super().__init__(os.fspath(path), sample_rate, channels)
        self.path = Path(path)
        self._data_bytes = 0
        try:
            # the name appears with its header: a kill at any moment leaves no empty file
            self._fd = open_published(path, self._write_first_header)
        except OSError as e:
            if e.errno == errno.ESPIPE:
                reason = "not a seekable file (write a stream instead)"
                raise AudioOutputError(self.target_name, reason, e.errno) from e
            raise AudioOutputError.from_os_error(self.target_name, e) from e

    def _write_first_header(self, fd: int) -> None:
        os.lseek(fd, 0, os.SEEK_SET)  # raises ESPIPE for a FIFO or socket
        _write_all(fd, self._header())

    def _header(self) -> bytes:
        return wav_header(self.sample_rate, self.channels, self._data_bytes)

    def _write_pcm(self, pcm: np.ndarray) -> None:
        data = pcm.tobytes()
        if self._data_bytes + len(data) > MAX_WAV_DATA_BYTES:
            raise AudioOutputError(self.target_name, "a WAV file holds at most 4 GiB of samples")
        end = WAV_HEADER_BYTES + self._data_bytes
        try:
            # data first: the header below must never describe bytes that are not on disk
            _write_all(self._fd, data)
            self._data_bytes += len(data)
            try:
                _write_at(self._fd, self._header(), 0)
            except OSError:
                self._data_bytes -= len(data)
                raise
        except OSError as e:
            self._cut_back_to(end)
            raise AudioOutputError.from_os_error(self.target_name, e) from e

    def _cut_back_to(self, end: int) -> None:
        # best effort: a partial chunk past the header's `data` size is ignored by readers anyway
        try:
            os.ftruncate(self._fd, end)
            os.lseek(self._fd, end, os.SEEK_SET)
        except OSError:
            pass

    def _close(self) -> None:
        try:
            os.close(self._fd)
        except OSError as e:
            raise AudioOutputError.from_os_error(self.target_name, e) from e


def _write_all(fd: int, data: bytes) -> None:
    """os.write until every byte is out (a regular file may take fewer bytes per call)."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _write_at(fd: int, data: bytes, offset: int) -> None:
    """Write at `offset` without moving the append position."""
    if hasattr(os, "pwrite"):
        view = memoryview(data)
        while view:
            written = os.pwrite(fd, view, offset)
            view, offset = view[written:], offset + written
        return
    position = os.lseek(fd, 0, os.SEEK_CUR)  # Windows has no pwrite
    os.lseek(fd, offset, os.SEEK_SET)
    try:
        _write_all(fd, data)
    finally:
        os.lseek(fd, position, os.SEEK_SET)
