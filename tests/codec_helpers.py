"""Decoding streamed FLAC, MP3 and Ogg/Opus bytes with libsndfile (soundfile), ADTS AAC with PyAV's decoder, and
comparing lossy audio to its source."""

from __future__ import annotations

import io

import numpy as np
import soundfile


def decode(data: bytes, dtype: str = "float32") -> tuple[np.ndarray, int]:
    """Every sample in `data` (a whole stream, or the part of one that has arrived so far), and its rate.

    A stream's header cannot know its length (FLAC's STREAMINFO says 0), so it is read block by block and
    never seeked: libsndfile would seek to the end it believes in, past what was decoded.
    """
    with soundfile.SoundFile(io.BytesIO(data)) as f:
        f.seekable = lambda: False
        blocks = []
        while True:
            block = f.read(4096, dtype=dtype)
            if len(block) == 0:
                break
            blocks.append(block)
        rate = f.samplerate
    return (np.concatenate(blocks) if blocks else np.zeros(0, dtype)), rate


class AdtsDecoder:
    """ffmpeg's AAC decoder (PyAV) fed an ADTS stream piece by piece, as a client reads it off the socket."""

    def __init__(self) -> None:
        import av

        self._codec = av.CodecContext.create("aac", "r")
        self.blocks: list[np.ndarray] = []
        self.rate = None

    def feed(self, data: bytes) -> int:
        """Decode what `data` completes; the number of samples decoded so far."""
        for packet in self._codec.parse(data):
            self._take(self._codec.decode(packet))
        return sum(len(b) for b in self.blocks)

    def finish(self) -> tuple[np.ndarray, int]:
        for packet in self._codec.parse(b""):
            self._take(self._codec.decode(packet))
        self._take(self._codec.decode(None))
        return (np.concatenate(self.blocks) if self.blocks else np.zeros(0, np.float32)), self.rate

    def _take(self, frames) -> None:
        for frame in frames:
            self.rate = frame.sample_rate
            self.blocks.append(frame.to_ndarray().reshape(-1).astype(np.float32))


def decode_adts(data: bytes) -> tuple[np.ndarray, int]:
    decoder = AdtsDecoder()
    decoder.feed(data)
    return decoder.finish()


def aligned(decoded: np.ndarray, source: np.ndarray) -> np.ndarray:
    """`decoded` shifted by its encoder's delay (found by cross-correlation) to line up with `source`."""
    corr = np.correlate(decoded, source, "full")
    lag = int(np.argmax(np.abs(corr))) - (len(source) - 1)
    shifted = decoded[lag:] if lag >= 0 else np.concatenate([np.zeros(-lag, decoded.dtype), decoded])
    out = np.zeros(len(source), np.float32)
    out[:min(len(shifted), len(source))] = shifted[:len(source)]
    return out


def similarity(decoded: np.ndarray, source: np.ndarray) -> tuple[float, float]:
    """(correlation, SNR in dB) of lossy `decoded` audio against the `source` it was encoded from."""
    y = aligned(decoded, source)
    error = y - source
    snr_db = 10 * np.log10(np.sum(source.astype(np.float64) ** 2) / max(np.sum(error.astype(np.float64) ** 2), 1e-20))
    return float(np.corrcoef(y, source)[0, 1]), float(snr_db)
