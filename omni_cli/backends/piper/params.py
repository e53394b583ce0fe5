"""Card parameters of the piper components (no heavy imports: `omni cards validate` reads these)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ...spec.schema import ParamsSchema, bounded


@dataclass
class PhonemizerParams(ParamsSchema):
    language: Literal["en_US"] = "en_US"  # gruut-lang-en; the voice is US English


@dataclass
class AcousticParams(ParamsSchema):
    # The voice's config suggests noise_scale 0.667 and noise_w 0.8; the card states what it uses.
    noise_scale: float = bounded(0.667, min=0.0, max=2.0, doc="spread of the latent frames, 0 = their mean")
    noise_w: float = bounded(0.8, min=0.0, max=2.0, doc="spread of the phoneme durations, 0 = their mean")


@dataclass
class DecoderParams(ParamsSchema):
    chunk_frames: int = bounded(128, min=1, max=4096, doc="frames per chunk (256 samples each)")
    first_chunk_frames: int = bounded(16, min=1, max=4096, doc="frames of a request's first chunk, doubling up to chunk_frames")
    pause_s: float = bounded(0.2, min=0.0, max=5.0, doc="silence between sentences")

    def problems(self) -> list[tuple[str, str]]:
        if self.first_chunk_frames > self.chunk_frames:
            return [("first_chunk_frames", f"must be at most chunk_frames ({self.chunk_frames})")]
        return []


PARAMS = {"phonemizer": PhonemizerParams, "acoustic": AcousticParams, "vocoder": DecoderParams}


@dataclass(frozen=True)
class PiperSettings:
    num_threads: int = bounded(0, min=0, max=256, doc="onnxruntime threads per component, 0 = one per core each")
SETTINGS = PiperSettings
weight_bytes = None  # the weights are the voice file's: nothing to estimate from the card
