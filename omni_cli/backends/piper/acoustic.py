"""Phoneme ids -> latent frames: the VITS text encoder, duration predictor and flow, one sentence per call."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..sentence_types import AcousticModel, FramesInput

NOISE_FRAMES_PER_ID = 8  # first guess at frames per phoneme id (the voice makes about 2 at speed 1)


class PiperAcoustic(AcousticModel):
    """The graph up to the decoder, its noise drawn by us from the request's seed (see graph.py)."""

    role = "acoustic"

    def __init__(self, name: str, session: Any, channels: int, model_bytes: int, params: Any):
        self.name = name
        self.channels = channels
        self.noise_scale = params.noise_scale
        self.noise_w = params.noise_w
        self._session = session
        self._bytes = model_bytes

    def weight_bytes(self) -> int:
        return self._bytes

    def step_bytes(self, num_ids: int) -> int:
        # the frame noise we draw dominates: channels x frames float32, frames bounded as in frames()
        return 4 * self.channels * NOISE_FRAMES_PER_ID * num_ids * 4

    def frames(self, item: FramesInput) -> np.ndarray:
        """float32 [channels, frames]."""
        ids = np.asarray([item.phoneme_ids], dtype=np.int64)
        rng = np.random.default_rng(list(item.seed))
        duration_noise = rng.standard_normal((1, ids.shape[1], 2), dtype=np.float32)
        feed = {"input": ids, "input_lengths": np.asarray([ids.shape[1]], dtype=np.int64),
                "scales": np.asarray([item.noise_scale, item.length_scale, item.noise_w], dtype=np.float32),
                "duration_noise": duration_noise}
        # The number of frames is decided inside the graph. Noise drawn position by position is the
        # same for its first T positions however many we draw, so a short guess is retried longer.
        guess = int(NOISE_FRAMES_PER_ID * ids.shape[1] * max(1.0, item.length_scale)) + 64
        for _ in range(4):
            frame_rng = np.random.default_rng([*item.seed, 1])
            feed["frame_noise"] = frame_rng.standard_normal((1, guess, self.channels), dtype=np.float32)
            try:
                return self._session.run(None, feed)[0][0]
            except Exception:  # noqa: BLE001 - too few noise positions: the graph's shapes disagree
                guess *= 4
        return self._session.run(None, feed)[0][0]  # raises the real error

    def run(self, kind: str, inputs: list[FramesInput]) -> list[Any]:
        out: list[Any] = []
        for item in inputs:  # sentences differ in length: one call each (padding would change nothing)
            try:
                out.append(self.frames(item))
            except Exception as exc:  # noqa: BLE001 - returned in place of this request's output
                out.append(exc)
        return out
