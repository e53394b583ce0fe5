"""Input speech for a program that listens: a whole file (any rate, via soundfile), or a WAV stream as it arrives."""

from __future__ import annotations

import struct
import threading
from typing import BinaryIO

import numpy as np

from .source import AudioSource


class AudioInputError(ValueError):
    """Input audio that cannot be read (a missing file, not audio, an unsupported WAV encoding)."""


def read_file(path: str) -> AudioSource:
    """A WAV/FLAC/OGG (whatever libsndfile reads) file, mixed to mono, as a source that has arrived in full."""
    import os

    import soundfile

    if not os.path.exists(path):
        raise AudioInputError(f"{path}: no such file")
    try:
        samples, rate = soundfile.read(path, dtype="float32", always_2d=True)
    except (soundfile.LibsndfileError, RuntimeError, OSError) as exc:
        raise AudioInputError(f"{path}: cannot read it as audio ({str(exc).strip() or type(exc).__name__})") from None
    if not len(samples):
        raise AudioInputError(f"{path}: the audio is empty (nothing to hear)")
    return AudioSource.whole(samples.mean(axis=1), rate)


def write_heard(source: AudioSource, path) -> None:
    """The samples a source has received, as a float WAV at its own rate: read back, they are the same samples."""
    import soundfile

    soundfile.write(path, source.arrived(), source.sample_rate, subtype="FLOAT", format="WAV")


def read_wav_bytes(data: bytes, where: str = "the audio") -> AudioSource:
    """A whole WAV held in memory (an HTTP body's base64 part)."""
    import io

    import soundfile

    try:
        samples, rate = soundfile.read(io.BytesIO(data), dtype="float32", always_2d=True)
    except (soundfile.LibsndfileError, RuntimeError, OSError) as exc:
        raise AudioInputError(f"{where}: cannot read it as audio ({str(exc).strip() or type(exc).__name__})") from None
    if not len(samples):
        raise AudioInputError(f"{where}: the audio is empty (nothing to hear)")
    return AudioSource.whole(samples.mean(axis=1), rate)


_FORMATS = {(1, 8): ("u1", 128.0, 128.0), (1, 16): ("<i2", 0.0, 32768.0), (1, 32): ("<i4", 0.0, 2147483648.0),
            (3, 32): ("<f4", 0.0, 1.0)}  # (format tag, bits) -> dtype, offset, scale


def stream_wav(raw: BinaryIO, where: str = "stdin") -> AudioSource:
    """Read a WAV stream's header now, then its samples on a thread as they arrive (`arecord -f S16_LE -r 16000`
    writes one with an unknown length); the source ends at the stream's end."""
    reader = _Reader(raw)
    tag, channels, rate, bits = _header(reader, where)
    dtype, offset, scale = _FORMATS[(tag, bits)]
    source = AudioSource(rate)
    frame_bytes = channels * bits // 8

    def pump() -> None:
        pending = reader.rest
        try:
            while True:
                data = reader.read_some()
                if not data:
                    break
                pending += data
                whole = len(pending) - len(pending) % frame_bytes
                if whole:
                    pcm = np.frombuffer(pending[:whole], dtype=dtype).astype(np.float32)
                    source.push(((pcm - offset) / scale).reshape(-1, channels).mean(axis=1))
                    pending = pending[whole:]
        except OSError as exc:
            source.end(f"cannot read {where}: {exc.strerror or exc}")
            return
        source.end()

    threading.Thread(target=pump, name="omni-audio-in", daemon=True).start()
    return source


class _Reader:
    """Reads a raw stream in whatever pieces arrive (os.read on a descriptor: nothing waits for a full buffer)."""

    def __init__(self, raw: BinaryIO):
        self.raw = raw
        self.rest = b""
        try:
            self.fd = raw.fileno()
        except (AttributeError, OSError, ValueError):
            self.fd = None

    def read_some(self) -> bytes:
        import os

        return os.read(self.fd, 1 << 15) if self.fd is not None else self.raw.read(1 << 15)

    def exactly(self, n: int) -> bytes:
        while len(self.rest) < n:
            data = self.read_some()
            if not data:
                break
            self.rest += data
        out, self.rest = self.rest[:n], self.rest[n:]
        return out


def _header(reader: _Reader, where: str) -> tuple[int, int, int, int]:
    """(format tag, channels, rate, bits) from RIFF/fmt; leaves the reader at the first sample of `data`."""
    head = reader.exactly(12)
    if len(head) < 12 or head[:4] != b"RIFF" or head[8:12] != b"WAVE":
        raise AudioInputError(f"{where}: not a WAV stream (it must start with a RIFF/WAVE header)")
    fmt = None
    while True:
        chunk = reader.exactly(8)
        if len(chunk) < 8:
            raise AudioInputError(f"{where}: the WAV stream ended before its data")
        name, size = chunk[:4], struct.unpack("<I", chunk[4:])[0]
        if name == b"data":
            break
        body = reader.exactly(size + (size & 1))
        if name == b"fmt " and len(body) >= 16:
            tag, channels, rate, _, _, bits = struct.unpack("<HHIIHH", body[:16])
            if tag == 0xFFFE and len(body) >= 26:  # WAVE_FORMAT_EXTENSIBLE: the sub-format's tag
                tag = struct.unpack("<H", body[24:26])[0]
            fmt = (tag, channels, rate, bits)
    if fmt is None:
        raise AudioInputError(f"{where}: the WAV stream has no fmt chunk before its data")
    if (fmt[0], fmt[3]) not in _FORMATS or not fmt[1] or not fmt[2]:
        raise AudioInputError(f"{where}: WAV encoding not supported (format {fmt[0]}, {fmt[3]} bits); "
                              "send 8/16/32-bit PCM or 32-bit float")
    return fmt
