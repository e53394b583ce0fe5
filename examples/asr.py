"""An offline recogniser for checking a voice: pocketsphinx's bundled US English model, and word error rate.

Used by examples/voice_wer.py and the voice tests; pocketsphinx is in the `voice-check` extra.
"""

from __future__ import annotations

import re

import numpy as np

RECOGNISER_RATE = 16000  # pocketsphinx's acoustic model is trained on 16 kHz audio


def resample(samples: np.ndarray, rate: int, to: int) -> np.ndarray:
    """Band-limited resampling by the spectrum (exact for periodic signals, fine for a whole utterance)."""
    n = len(samples)
    m = int(round(n * to / rate))
    spectrum = np.fft.rfft(samples.astype(np.float64))
    kept = np.zeros(m // 2 + 1, dtype=complex)
    k = min(len(spectrum), len(kept))
    kept[:k] = spectrum[:k]
    return np.fft.irfft(kept, m) * (m / n)


class Recogniser:
    def __init__(self):
        from pocketsphinx import Decoder

        self._decoder = Decoder(samprate=RECOGNISER_RATE, loglevel="FATAL")

    def transcribe(self, samples: np.ndarray, rate: int) -> str:
        pcm = np.clip(resample(samples, rate, RECOGNISER_RATE), -1.0, 1.0)
        self._decoder.start_utt()
        self._decoder.process_raw((pcm * 32767).astype(np.int16).tobytes(), full_utt=True)
        self._decoder.end_utt()
        hyp = self._decoder.hyp()
        return hyp.hypstr if hyp is not None else ""


def words(text: str) -> list[str]:
    return re.findall(r"[a-z']+", text.lower())


def word_errors(reference: list[str], hypothesis: list[str]) -> int:
    """Levenshtein distance over words: substitutions + deletions + insertions."""
    row = list(range(len(hypothesis) + 1))
    for i, ref in enumerate(reference, 1):
        prev, row[0] = row[0], i
        for j, hyp in enumerate(hypothesis, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (ref != hyp))
    return row[-1]
