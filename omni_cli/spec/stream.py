"""What a request streams while it runs: text pieces, audio chunks with real samples, its end."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

import numpy as np


class RequestStatus(enum.Enum):
    QUEUED = "queued"  # waiting for admission
    RUNNING = "running"
    FINISHED = "finished"
    CANCELLED = "cancelled"
    FAILED = "failed"

    @property
    def is_done(self) -> bool:
        return self in _DONE  # the engine asks per WorkUnit: a tuple compares by identity, a set would hash


_DONE = (RequestStatus.FINISHED, RequestStatus.CANCELLED, RequestStatus.FAILED)


@dataclass(frozen=True)
class TextPiece:
    request_id: str
    text: str


class MonoAudio:
    """The units of anything holding `samples` (float32 mono in [-1, 1]) at `sample_rate` (Hz): a chunk, a
    whole utterance (api.Speech)."""

    samples: np.ndarray
    sample_rate: int

    @property
    def num_samples(self) -> int:
        return int(self.samples.shape[0])

    @property
    def duration_s(self) -> float:
        return self.num_samples / self.sample_rate


@dataclass(frozen=True)
class AudioChunk(MonoAudio):
    request_id: str
    index: int  # 0, 1, 2 … within the request
    sample_rate: int  # Hz
    samples: np.ndarray  # float32 mono in [-1, 1]


@dataclass(frozen=True)
class Notice:
    """Something a person should know about a request that still runs (e.g. characters dropped)."""

    request_id: str
    message: str


@dataclass(frozen=True)
class RequestDone:
    request_id: str
    status: RequestStatus
    error: str | None = None
    metrics: dict[str, Any] = field(default_factory=dict)


StreamEvent = TextPiece | AudioChunk | Notice | RequestDone
