"""A FLAC file written chunk by chunk through soundfile (libsndfile)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import soundfile

from .base import AudioWriter
from .errors import AudioOutputError

_OPEN_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_BINARY", 0)
_SOUNDFILE_ERRORS = (soundfile.SoundFileError, RuntimeError, OSError)


class FlacFileWriter(AudioWriter):
    """16-bit FLAC to a seekable path, encoded incrementally as chunks arrive.

    Unlike WavFileWriter, the header (STREAMINFO: total samples, MD5) is finalised only at
    `close()`: a file read mid-run or left by a killed run has no recorded length and is missing
    the encoder's last, still-buffered block. Samples are quantised exactly like the WAV
    writers (`float_to_pcm16`) before encoding, so FLAC and WAV hold the same int16 values.
    """

    def __init__(self, path: str | os.PathLike, sample_rate: int, channels: int = 1) -> None:
        super().__init__(os.fspath(path), sample_rate, channels)
        self.path = Path(path)
        # open the fd ourselves: an OSError names the reason, a libsndfile error does not
        try:
            fd = os.open(path, _OPEN_FLAGS, 0o666)
        except OSError as e:
            raise AudioOutputError.from_os_error(self.target_name, e) from e
        try:
            self._file = soundfile.SoundFile(
                fd, mode="w", samplerate=self.sample_rate, channels=self.channels,
                format="FLAC", subtype="PCM_16", closefd=True,
            )  # fmt: skip
        except _SOUNDFILE_ERRORS as e:
            os.close(fd)
            raise AudioOutputError(self.target_name, str(e)) from e

    def _write_pcm(self, pcm: np.ndarray) -> None:
        try:
            self._file.write(pcm)
            self._file.flush()
        except _SOUNDFILE_ERRORS as e:
            raise AudioOutputError(self.target_name, str(e)) from e

    def _close(self) -> None:
        try:
            self._file.close()
        except _SOUNDFILE_ERRORS as e:
            raise AudioOutputError(self.target_name, str(e)) from e
