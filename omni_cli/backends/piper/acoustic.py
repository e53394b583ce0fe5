"""Phoneme ids -> latent frames: the VITS text encoder, duration predictor and flow, one sentence per call."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..sentence_types import AcousticModel, FramesInput

NOISE_FRAMES_PER_ID = 8  # first guess at frames per phoneme id (the voice makes about 2 at speed 1)
# The graph's attention and alignment grow with the square of a call's ids (about 80 bytes x ids^2): a sentence
# of more ids (a 2,000-letter "word") runs in pieces of at most this many, cut between words where it can, so
# one request's step stays within what `step_bytes` says whatever the text.
MAX_IDS_PER_CALL = 1000
BYTES_PER_IDS_SQUARED = 80


class PiperAcoustic(AcousticModel):
    """The graph up to the decoder, its noise drawn by us from the request's seed (see graph.py)."""

    role = "acoustic"

    def __init__(self, name: str, session: Any, channels: int, model_bytes: int, params: Any,
                 phoneme_id_map: dict[str, list[int]] | None = None):
        self.name = name
        self._marks = _Marks.of(phoneme_id_map) if phoneme_id_map else None  # None: every sentence in one call
        self.channels = channels
        self.noise_scale = params.noise_scale
        self.noise_w = params.noise_w
        self._session = session
        self._bytes = model_bytes

    def weight_bytes(self) -> int:
        return self._bytes

    def step_bytes(self, num_ids: int) -> int:
        # one call's frame noise (channels x frames float32, frames bounded as in frames()) and attention (pieces
        # of at most MAX_IDS_PER_CALL ids), and the sentence's frames joined (about 2 a phoneme id, at most 4)
        largest = min(num_ids, MAX_IDS_PER_CALL) if self._marks else num_ids
        return (4 * self.channels * NOISE_FRAMES_PER_ID * largest * 4 + BYTES_PER_IDS_SQUARED * largest ** 2
                + 4 * self.channels * 4 * num_ids)

    def frames(self, item: FramesInput) -> np.ndarray:
        """float32 [channels, frames]: the sentence in one call, or in pieces joined (see MAX_IDS_PER_CALL)."""
        if self._marks is None or len(item.phoneme_ids) <= MAX_IDS_PER_CALL:
            return self._frames(item.phoneme_ids, item, list(item.seed))
        pieces = self._marks.pieces(item.phoneme_ids, MAX_IDS_PER_CALL)
        return np.concatenate([self._frames(ids, item, [*item.seed, 2, k] if k else list(item.seed))
                               for k, ids in enumerate(pieces)], axis=1)

    def _frames(self, phoneme_ids: list[int], item: FramesInput, seed: list[int]) -> np.ndarray:
        ids = np.asarray([phoneme_ids], dtype=np.int64)
        rng = np.random.default_rng(seed)
        duration_noise = rng.standard_normal((1, ids.shape[1], 2), dtype=np.float32)
        feed = {"input": ids, "input_lengths": np.asarray([ids.shape[1]], dtype=np.int64),
                "scales": np.asarray([item.noise_scale, item.length_scale, item.noise_w], dtype=np.float32),
                "duration_noise": duration_noise}
        # The number of frames is decided inside the graph. Noise drawn position by position is the
        # same for its first T positions however many we draw, so a short guess is retried longer.
        guess = int(NOISE_FRAMES_PER_ID * ids.shape[1] * max(1.0, item.length_scale)) + 64
        for _ in range(4):
            frame_rng = np.random.default_rng([*seed, 1])
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


class _Marks:
    """The voice's ids that frame a sentence (^ opens, $ closes, _ follows every symbol) and part its words."""

    def __init__(self, bos: int, eos: int, pad: int, space: int | None):
        self.bos, self.eos, self.pad, self.space = bos, eos, pad, space

    @classmethod
    def of(cls, id_map: dict[str, list[int]]) -> _Marks:
        return cls(id_map["^"][0], id_map["$"][0], id_map["_"][0], id_map[" "][0] if " " in id_map else None)

    def pieces(self, ids: list[int], most: int) -> list[list[int]]:
        """`ids` (^ _ a _ b _ ... $) as sentences of at most `most` ids each, cut after a word where one ends in
        the piece's second half, else between two symbols (a word longer than a piece)."""
        inner = ids[2:-1] if ids[:2] == [self.bos, self.pad] and ids[-1:] == [self.eos] else list(ids)
        room = max(2, (most - 3) // 2 * 2)  # symbol-and-pad pairs stay together
        out: list[list[int]] = []
        start = 0
        while start < len(inner):
            end = min(start + room, len(inner))
            if end < len(inner) and self.space is not None:
                spaces = [i for i in range(end - 2, start + room // 2, -2) if inner[i] == self.space]
                end = spaces[0] + 2 if spaces else end
            out.append([self.bos, self.pad, *inner[start:end], self.eos])
            start = end
        return out
