"""Card parameters of the numpy components, with the bounds checked before anything is allocated."""

from __future__ import annotations

from dataclasses import dataclass

from ...spec.schema import bounded


@dataclass
class ThinkerParams:
    d_model: int = bounded(64, min=8, max=1024)
    num_layers: int = bounded(2, min=1, max=16)
    num_heads: int = bounded(4, min=1, max=32)
    max_positions: int = bounded(4096, min=16, max=65536)


@dataclass
class TalkerParams:
    d_model: int = bounded(64, min=8, max=1024)
    num_layers: int = bounded(2, min=1, max=16)
    num_heads: int = bounded(4, min=1, max=32)
    codebook_size: int = bounded(64, min=2, max=8192)
    max_positions: int = bounded(16384, min=16, max=262144)
    min_codes_per_token: int = bounded(3, min=1, max=64, doc="EOS is suppressed before this many codes per text token")
    max_codes_per_token: int = bounded(8, min=1, max=64)


@dataclass
class VocoderParams:
    hidden: int = bounded(48, min=4, max=1024)
    num_layers: int = bounded(3, min=1, max=16)
    kernel_codes: int = bounded(3, min=1, max=16, doc="codes each conv layer sees on its left, itself included")
    lookahead_codes: int = bounded(2, min=0, max=16)
    num_harmonics: int = bounded(8, min=1, max=64)


PARAMS = {"thinker": ThinkerParams, "talker": TalkerParams, "vocoder": VocoderParams}
