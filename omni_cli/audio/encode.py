"""Whole-utterance encoding in memory (a server's response body): WAV, raw PCM, libsndfile's codecs, AAC."""

from __future__ import annotations

import functools
import io

import numpy as np

from .aac import aac_unavailable
from .pcm import WAV_HEADER_BYTES, float_to_pcm16, wav_header
from .stream_encoder import CODECS, OPUS_RATES, SOUNDFILE_CODECS, StreamEncoder, opus_rate

# which of the codecs can be written is checked at run time (MP3 needs libsndfile >= 1.1, Opus needs it
# built with libopus); libsndfile has no AAC encoder, so AAC needs PyAV (the serve extra)
ENCODABLE = ("wav", "pcm", *CODECS)


def pcm16_bytes(samples: np.ndarray) -> bytes:
    """Mono float32 samples as s16le bytes, quantised exactly as every writer does."""
    return float_to_pcm16(samples).tobytes()


def wav_bytes(pcm: bytes, sample_rate: int) -> bytes:
    """A complete 16-bit mono WAV holding `pcm` (s16le), with exact sizes in its header."""
    return wav_header(sample_rate, 1, len(pcm)) + pcm


@functools.lru_cache(maxsize=64)  # asked per request; libsndfile's list of formats takes milliseconds to build
def can_encode(fmt: str, sample_rate: int) -> str | None:
    """None when `fmt` can be written here, else why not (one line)."""
    if fmt in ("wav", "pcm"):
        return None
    if fmt == "aac":
        return aac_unavailable()  # any rate: the stream encoder resamples to one AAC carries
    codec = SOUNDFILE_CODECS.get(fmt)
    if codec is None:
        return f"this server cannot write {fmt} (it writes {', '.join(ENCODABLE)})"
    import soundfile

    major, subtype = codec
    if major not in soundfile.available_formats() or subtype not in soundfile.available_subtypes(major):
        return f"this server's libsndfile ({soundfile.__libsndfile_version__}) cannot write {fmt}"
    if fmt == "opus" and sample_rate not in OPUS_RATES:
        try:
            import soxr  # noqa: F401 - opus at other rates is resampled
        except ImportError:
            return f"opus cannot carry {sample_rate} Hz audio (install soxr to resample it)"
    return None


def encode(samples: np.ndarray, sample_rate: int, fmt: str) -> bytes:
    """The whole utterance as one file in `fmt` (wav, pcm, flac, mp3, opus, aac); check `can_encode` first."""
    pcm16 = float_to_pcm16(samples)
    if fmt == "pcm":
        return pcm16.tobytes()
    if fmt == "wav":
        return wav_bytes(pcm16.tobytes(), sample_rate)
    if fmt == "aac":  # ADTS has no header to complete: the streamed bytes are the whole file
        encoder = StreamEncoder(fmt, sample_rate)
        return encoder.encode(samples) + encoder.finish()
    import soundfile

    major, subtype = SOUNDFILE_CODECS[fmt]
    rate = opus_rate(sample_rate) if fmt == "opus" else sample_rate
    if rate != sample_rate:
        import soxr

        pcm16 = float_to_pcm16(soxr.resample(np.asarray(samples, np.float32), sample_rate, rate))
    buf = io.BytesIO()
    # the same int16 values as the WAV, so a lossless format decodes to exactly them
    with soundfile.SoundFile(buf, mode="w", samplerate=rate, channels=1, format=major, subtype=subtype) as f:
        f.write(pcm16)
    return buf.getvalue()


__all__ = ["ENCODABLE", "WAV_HEADER_BYTES", "can_encode", "encode", "pcm16_bytes", "wav_bytes"]
