"""What the listening tests share: a voiced test clip, and an AudioSource that receives it in pieces as it plays."""

from __future__ import annotations

import threading
import time

import numpy as np

from omni_cli.audio.source import AudioSource

RATE = 16000  # the audio encoders' rate (Whisper features)


def clip(seconds: float, seed: int, silent_s: float = 0.0) -> np.ndarray:
    t = np.arange(int(seconds * RATE)) / RATE
    rng = np.random.default_rng(seed)
    voice = 0.3 * np.sin(2 * np.pi * (200 + 30 * seed) * t * (1 + 0.3 * t)) + 0.02 * rng.standard_normal(t.size)
    return (voice * (t >= silent_s)).astype(np.float32)


def streamed(samples: np.ndarray) -> AudioSource:
    source = AudioSource(RATE)

    def feed():
        for i in range(0, len(samples), 2777):
            source.push(samples[i:i + 2777])
            time.sleep(0.001)
        source.end()

    threading.Thread(target=feed, daemon=True).start()
    return source
