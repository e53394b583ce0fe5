"""A request made and dropped before real ones, so a fresh process's first calls at each shape are paid here."""

from __future__ import annotations

import time
from typing import Any

from ..spec import SpeakRequest
from ..spec.stream import AudioChunk


def warm_up(engine: Any, text: str, audio_chunks: int) -> float:
    """Make one request on `engine` and drop it; returns its seconds. A process's first call at each shape sets
    that shape up, so a request alone in a fresh process would make its first chunks late; `omni serve` pays
    that here, before it listens. Stops after `audio_chunks` chunks of audio (the shapes a request alone meets
    first) and cancels the rest."""
    start = time.perf_counter()
    handle = engine.submit(SpeakRequest(text, request_id="warm-up"))
    heard = 0
    try:
        for event in handle.stream():
            if isinstance(event, AudioChunk) and event.num_samples:
                heard += 1
                if heard == audio_chunks:
                    handle.cancel()
    finally:  # raised or interrupted: it must not stay behind, holding its budget, among real requests
        handle.cancel()
    return time.perf_counter() - start
