"""Encoding audio chunk by chunk (WAV, PCM, FLAC, MP3, Ogg/Opus, AAC), each chunk's bytes handed out as the encoder makes them."""

from __future__ import annotations

import math

import numpy as np

from .aac import FRAME_SAMPLES, aac_rate
from .pcm import UNKNOWN_SIZE, float_to_pcm16, wav_header

# format name -> (libsndfile major format, subtype)
SOUNDFILE_CODECS = {"flac": ("FLAC", "PCM_16"), "mp3": ("MP3", "MPEG_LAYER_III"), "opus": ("OGG", "OPUS")}
CODECS = (*SOUNDFILE_CODECS, "aac")  # AAC through PyAV (aac.py): libsndfile has no AAC encoder
OPUS_RATES = (8000, 12000, 16000, 24000, 48000)  # the only rates an Opus stream can carry
_SFC_SET_OGG_PAGE_LATENCY_MS = 0x1302  # libsndfile >= 1.2: how much audio an Ogg page may hold before it is written
_PAGE_LATENCY_MS = 50.0  # libsndfile's floor; its default (1 s) would hold the first second back
# an MP3 frame is 24-48 ms; an Ogg page holds at least 50 ms (above), and the first slice must also fill the
# Opus encoder's look-ahead, or the first bytes out would be the stream's headers without any audio
_SLICE_S = {"mp3": 0.06, "opus": 0.08}
# AAC in frames of 1024 samples (at the output rate): its encoder gives its first packet after two, so a slice
# of two makes bytes from the first hop off the event loop on
_SLICE_FRAMES = {"aac": 2}
_OPTIONS = {
    # MP3 at a constant bitrate: a decoder reading a stream without LAME's closing Info frame (patched in at
    # the start, which a stream has already sent) reckons its length from its bytes. Level 0.6 of libsndfile's
    # 0 (best) .. 1 (smallest) is about 64 kbit/s for 22-24 kHz mono speech
    "mp3": {"bitrate_mode": "CONSTANT", "compression_level": 0.6},
    # FLAC's presets 0-2 code blocks of 1152 samples, the others 4096: a frame leaves every 48 ms, not 170 ms
    "flac": {"compression_level": 0.25},
    # Opus at about 60 kbit/s: with a level set libsndfile's encoder runs several times faster than at
    # its default (about 40 kbit/s), so the first slice leaves sooner
    "opus": {"compression_level": 0.8},
}


def opus_rate(sample_rate: int) -> int:
    """The rate an Opus stream of `sample_rate` audio is encoded at: the same, or the next one Opus carries."""
    return next((r for r in OPUS_RATES if r >= sample_rate), OPUS_RATES[-1])


class _Sink:
    """The file-like object libsndfile writes into; what it wrote past the last `take()` waits in `pending`.

    At close libsndfile seeks back to patch headers (FLAC's STREAMINFO totals, MP3's Info frame). Bytes
    already handed out cannot change, so such a patch is dropped and the stream's headers keep saying
    "length unknown", which decoders accept (as they do for ffmpeg writing to a pipe).
    """

    def __init__(self) -> None:
        self._taken = 0  # bytes handed out: offsets below this are gone
        self._pending = bytearray()
        self._pos = 0

    def write(self, data) -> int:
        view = memoryview(data).cast("B")
        size = len(view)
        start, self._pos = self._pos, self._pos + len(view)
        if self._pos <= self._taken:
            return size
        if start < self._taken:
            view, start = view[self._taken - start:], self._taken
        at = start - self._taken
        if at > len(self._pending):
            self._pending.extend(bytes(at - len(self._pending)))
        self._pending[at:at + len(view)] = view
        return size

    def seek(self, offset: int, whence: int = 0) -> int:
        base = (0, self._pos, self._taken + len(self._pending))[whence]
        self._pos = base + offset
        return self._pos

    def tell(self) -> int:
        return self._pos

    def read(self, size: int = -1) -> bytes:
        return b""  # libsndfile does not read back what it encodes; nothing is kept to read

    def take(self) -> bytes:
        data = bytes(self._pending)
        self._taken += len(data)
        self._pending.clear()
        return data


class StreamEncoder:
    """`encode(samples)` returns the bytes the encoder made of this chunk (maybe none yet); `finish()` the rest.

    WAV gets a stream header (sizes unknown) in front of the first bytes; PCM is headerless s16le. The
    codecs (libsndfile's; AAC through PyAV, as ADTS frames) take the same int16 values the WAV holds, so FLAC
    decodes to exactly them. Opus and AAC carry only some rates: other audio is resampled (soxr, streaming) to
    the next rate they carry.
    """

    def __init__(self, fmt: str, sample_rate: int, file=None) -> None:
        """`file`: a seekable binary file the codec writes into itself (libsndfile patches headers at close);
        `encode` and `finish` then return nothing. Without it the bytes are handed out."""
        if fmt not in ("wav", "pcm", *CODECS):
            raise ValueError(f"cannot stream {fmt!r} (supported: wav, pcm, {', '.join(CODECS)})")
        self.format = fmt
        self.sample_rate = sample_rate  # of the audio fed in
        self._prefix = wav_header(sample_rate, 1, UNKNOWN_SIZE) if fmt == "wav" else b""
        self._file = self._sink = self._resampler = None
        if fmt in CODECS:
            self._open_codec(fmt, sample_rate, file)

    def start(self) -> bytes:
        """What can be sent before any audio: a WAV's stream header; nothing for the others."""
        data, self._prefix = self._prefix, b""
        return data

    @property
    def is_slow(self) -> bool:
        """MP3, Opus and AAC take milliseconds per chunk: a server runs them off its event loop, in slices."""
        return self.format in _SLICE_S or self.format in _SLICE_FRAMES

    def slices(self, samples: np.ndarray) -> list[np.ndarray]:
        """`samples` in pieces to encode one by one, so a slow codec's first bytes need not wait for the whole chunk."""
        if self.format in _SLICE_FRAMES:
            # resampled, one frame more: soxr holds a few hundred samples back in its filter
            frames = _SLICE_FRAMES[self.format] + (self._resampler is not None)
            step = math.ceil(frames * FRAME_SAMPLES * self.sample_rate / self.output_rate)
        else:
            step = max(1, round(self.sample_rate * _SLICE_S.get(self.format, 0))) if self.is_slow else len(samples)
        return [samples[i:i + step] for i in range(0, len(samples), step)] or [samples]

    @property
    def output_rate(self) -> int:
        rates = {"opus": opus_rate, "aac": aac_rate}
        return rates[self.format](self.sample_rate) if self.format in rates else self.sample_rate

    def _open_codec(self, fmt: str, sample_rate: int, file) -> None:
        rate = self.output_rate
        if rate != sample_rate:
            import soxr

            self._resampler = soxr.ResampleStream(sample_rate, rate, 1, dtype="float32")
        self._sink = _Sink() if file is None else file
        if fmt == "aac":
            from .aac import AdtsFile

            self._file = AdtsFile(self._sink, rate)
            return
        import soundfile

        major, subtype = SOUNDFILE_CODECS[fmt]
        options = _OPTIONS.get(fmt, {})
        self._file = soundfile.SoundFile(self._sink, mode="w", samplerate=rate, channels=1, format=major,
                                         subtype=subtype, **options)
        if fmt == "opus":
            _set_page_latency(self._file, _PAGE_LATENCY_MS)

    def encode(self, samples: np.ndarray) -> bytes:
        if self._file is None:
            data, self._prefix = self._prefix + float_to_pcm16(samples).tobytes(), b""
            return data
        if self._resampler is not None:
            samples = self._resampler.resample_chunk(np.asarray(samples, np.float32))
        self._file.write(float_to_pcm16(samples))
        return self._taken()

    def finish(self) -> bytes:
        """The encoder's last bytes (and a WAV header if no chunk came); the stream is complete after them."""
        if self._file is None:
            data, self._prefix = self._prefix, b""
            return data
        if self._resampler is not None:
            self._file.write(float_to_pcm16(self._resampler.resample_chunk(np.zeros(0, np.float32), last=True)))
        self._file.close()
        return self._taken()

    def _taken(self) -> bytes:
        return self._sink.take() if isinstance(self._sink, _Sink) else b""

    def close(self) -> None:
        """Abandon the stream (the request ended badly): free the encoder, nothing more is sent."""
        if self._file is not None and not self._file.closed:
            self._file.close()


def _set_page_latency(file, latency_ms: float) -> None:
    # soundfile has no wrapper for this command; without it pages still come, each second
    try:
        from soundfile import _ffi, _snd

        value = _ffi.new("double*", latency_ms)
        _snd.sf_command(file._file, _SFC_SET_OGG_PAGE_LATENCY_MS, value, _ffi.sizeof("double"))
    except (ImportError, AttributeError):
        pass
