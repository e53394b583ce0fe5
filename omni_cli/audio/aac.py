"""AAC in ADTS frames through PyAV (ffmpeg's native encoder): each frame written as soon as it is encoded."""

from __future__ import annotations

import numpy as np

# the rates an AAC stream can carry (its sampling-frequency index); other audio is resampled to the next one
AAC_RATES = (7350, 8000, 11025, 12000, 16000, 22050, 24000, 32000, 44100, 48000, 64000, 88200, 96000)
BIT_RATE = 64000  # mono speech, as MP3's constant ~64 kbit/s
FRAME_SAMPLES = 1024  # one AAC frame; the encoder's priming delay is one frame too
EXTRA = "serve"  # the extra that installs PyAV


def aac_rate(sample_rate: int) -> int:
    """The rate an AAC stream of `sample_rate` audio is encoded at: the same, or the next one AAC carries."""
    return next((r for r in AAC_RATES if r >= sample_rate), AAC_RATES[-1])


def aac_unavailable() -> str | None:
    """None when AAC can be written here, else why not (one line, naming the extra)."""
    try:
        import av
    except ImportError:
        from ..extras import install_command

        return f"aac needs PyAV, which this install lacks: {install_command(EXTRA)} (or pip install av)"
    try:
        av.codec.Codec("aac", "w")
    except Exception:  # a PyAV built against an ffmpeg without the encoder
        return f"this PyAV ({av.__version__}) has no AAC encoder"
    return None


class AacUnavailableError(RuntimeError):
    """PyAV (or its AAC encoder) is not installed; the message says how to get it."""


class AdtsFile:
    """Writes int16 mono audio as an ADTS AAC stream into `file` (anything with `write(bytes)`): it never seeks,
    so what `file` received after any write is a stream a decoder reads up to there.

    The interface is the part of soundfile.SoundFile that StreamEncoder uses: `write`, `close`, `closed`.
    """

    def __init__(self, file, sample_rate: int) -> None:
        reason = aac_unavailable()
        if reason is not None:
            raise AacUnavailableError(reason)
        import av

        if sample_rate not in AAC_RATES:
            raise ValueError(f"AAC cannot carry {sample_rate} Hz (it carries {', '.join(map(str, AAC_RATES))})")
        self.sample_rate = sample_rate
        # flush_packets: the muxer hands each frame to `file` at once, not when its 32 KiB buffer fills
        self._container = av.open(file, mode="w", format="adts", options={"flush_packets": "1"})
        self._stream = self._container.add_stream("aac", rate=sample_rate, layout="mono")
        self._stream.bit_rate = BIT_RATE
        self._pts = 0
        self.closed = False

    def write(self, pcm16: np.ndarray) -> None:
        import av

        pcm16 = np.ascontiguousarray(pcm16, np.int16).reshape(1, -1)
        if pcm16.shape[1] == 0:
            return
        frame = av.AudioFrame.from_ndarray(pcm16, format="s16", layout="mono")
        frame.sample_rate, frame.pts = self.sample_rate, self._pts
        self._pts += pcm16.shape[1]
        # PyAV re-frames whatever length comes into the encoder's 1024-sample frames, keeping the remainder
        for packet in self._stream.encode(frame):
            self._container.mux(packet)

    def close(self) -> None:
        """Encode what the encoder holds (its last frames, the remainder padded) and end the stream."""
        if self.closed:
            return
        self.closed = True
        try:
            for packet in self._stream.encode(None):
                self._container.mux(packet)
        finally:
            self._container.close()
