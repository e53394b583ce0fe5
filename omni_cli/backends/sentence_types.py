"""What the components of a sentence cascade (text -> phoneme ids -> frames -> samples) look like to the loops.

The piper backend implements them; the loops (`phonemize`, `sentence_frames`, `frame_decode`) know only this.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from .base import Component

# Work-unit kinds (their trace kinds too)
TEXT_SPLIT = "text_split"  # one per request: the text normalised and split into sentences
SENTENCE = "sentence"  # one per sentence: its phoneme ids (phonemize) or its latent frames (sentence_frames)
FRAME_CHUNK = "frame_chunk"  # one per chunk of frames: its samples


@dataclass(frozen=True)
class TextWindow:
    """A stretch of a request's text for one text_split unit (a long text is split a window at a time)."""

    text: str
    must_speak: bool  # nothing readable in it is an error (the whole text's last window, nothing read before)


@dataclass(frozen=True)
class SplitText:
    sentences: list[str]  # as written, one per sentence
    dropped: str  # characters the phonemizer could not read, each once


@dataclass(frozen=True)
class ReadSentence:
    """What the phonemizer makes of one sentence: its text as read (numbers in words) and its phoneme ids."""

    text: str
    phoneme_ids: list[int]


@dataclass(frozen=True)
class SentencePhonemes:
    """What the phonemize loop publishes per sentence."""

    index: int
    text: str
    phoneme_ids: list[int]
    dropped: str = ""  # on sentence 0 only: the whole text's dropped characters


@dataclass(frozen=True)
class SentenceFrames:
    """What the sentence_frames loop publishes per sentence."""

    index: int
    frames: np.ndarray  # float32 [channels, num_frames]

    @property
    def num_frames(self) -> int:
        return int(self.frames.shape[1])


@dataclass(frozen=True)
class FramesInput:
    """One sentence of one request, for the acoustic model."""

    phoneme_ids: list[int]
    length_scale: float  # 1 / speed: every predicted duration is stretched by it
    noise_scale: float  # spread of the latent frames (0: their mean)
    noise_w: float  # spread of the predicted durations (0: their mean)
    seed: tuple[int, int]  # (request seed, sentence index): this sentence's noise, whatever ran before


@dataclass(frozen=True)
class FrameChunkInput:
    frames: np.ndarray  # float32 [channels, n]: the chunk with its context frames on each side
    keep_start: int  # frames [keep_start, keep_end) of `frames` are this chunk's: their samples are kept
    keep_end: int
    carry: Any = None  # what the vocoder handed back with this sentence's previous chunk (None: its first)
    last: bool = False  # the sentence's last chunk: a streaming vocoder flushes what it held back


@dataclass(frozen=True)
class DecodedChunk:
    """A frame chunk's samples, and what the vocoder needs back with the sentence's next chunk (a streaming
    vocoder's held state; a request's state lives in its loop, so a failed batch leaves it as it was)."""

    samples: np.ndarray  # float32
    carry: Any = None


class PhonemizerModel(Component, Protocol):
    """run(TEXT_SPLIT, [TextWindow]) -> [SplitText]; run(SENTENCE, [sentence text]) -> [ReadSentence]."""

    def unreadable(self, text: str) -> str | None:
        """Why the phonemizer can read nothing in `text` (bad input, refused before the request runs), or None."""
        return None


class AcousticModel(Component, Protocol):
    """run(SENTENCE, [FramesInput]) -> [float32 frames, channels x num_frames]."""

    noise_scale: float
    noise_w: float

    def step_bytes(self, num_ids: int) -> int: ...


class FrameVocoder(Component, Protocol):
    """run(FRAME_CHUNK, [FrameChunkInput]) -> [DecodedChunk]: the samples of frames keep_start..keep_end (a
    streaming vocoder's lag behind its frames: fewer in a sentence's first chunk, that many more in its last)."""

    sample_rate: int
    samples_per_frame: int
    context_frames: int
    pause_samples: int  # silence before every sentence but the first

    def chunk_size(self, index: int) -> int: ...

    def step_bytes(self, num_frames: int) -> int: ...

