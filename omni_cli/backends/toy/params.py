"""Card parameters of the numpy components, with the bounds checked before anything is allocated."""

from __future__ import annotations

from dataclasses import dataclass

from ...spec.schema import bounded


def _head_problems(d_model: int, num_heads: int) -> list[tuple[str, str]]:
    if d_model % num_heads or (d_model // num_heads) % 2:
        return [("num_heads", f"must split d_model {d_model} into heads of even size")]
    return []


@dataclass
class ThinkerParams:
    d_model: int = bounded(64, min=8, max=1024)
    num_layers: int = bounded(2, min=1, max=16)
    num_heads: int = bounded(4, min=1, max=32)
    max_positions: int = bounded(4096, min=16, max=65536)

    def problems(self) -> list[tuple[str, str]]:
        return _head_problems(self.d_model, self.num_heads)


@dataclass
class TalkerParams:
    d_model: int = bounded(64, min=8, max=1024)
    num_layers: int = bounded(2, min=1, max=16)
    num_heads: int = bounded(4, min=1, max=32)
    codebook_size: int = bounded(64, min=2, max=8192)
    max_positions: int = bounded(16384, min=16, max=262144)
    min_codes_per_token: int = bounded(3, min=1, max=64, doc="EOS is suppressed before this many codes per text token")
    max_codes_per_token: int = bounded(8, min=1, max=64)

    def problems(self) -> list[tuple[str, str]]:
        out = _head_problems(self.d_model, self.num_heads)
        if self.min_codes_per_token > self.max_codes_per_token:
            out.append(("min_codes_per_token", f"must not exceed max_codes_per_token ({self.max_codes_per_token})"))
        return out


@dataclass
class VocoderParams:
    hidden: int = bounded(48, min=4, max=1024)
    num_layers: int = bounded(3, min=1, max=16)
    kernel_codes: int = bounded(3, min=1, max=16, doc="codes each conv layer sees on its left, itself included")
    lookahead_codes: int = bounded(2, min=0, max=16)
    num_harmonics: int = bounded(8, min=1, max=64)


PARAMS = {"thinker": ThinkerParams, "talker": TalkerParams, "vocoder": VocoderParams}


@dataclass(frozen=True)
class NumpySettings:
    """The numpy backend takes no backend settings: weights come from the card's seed."""


SETTINGS = NumpySettings
