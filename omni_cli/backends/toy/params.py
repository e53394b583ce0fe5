"""Card parameters of the numpy components, with the bounds checked before anything is allocated."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...spec.schema import ParamsSchema, bounded


def _head_problems(d_model: int, num_heads: int) -> list[tuple[str, str]]:
    if d_model % num_heads or (d_model // num_heads) % 2:
        return [("num_heads", f"must split d_model {d_model} into heads of even size")]
    return []


@dataclass
class ThinkerParams(ParamsSchema):
    d_model: int = bounded(64, min=8, max=1024)
    num_layers: int = bounded(2, min=1, max=16)
    num_heads: int = bounded(4, min=1, max=32)
    max_positions: int = bounded(4096, min=16, max=65536)

    def problems(self) -> list[tuple[str, str]]:
        return _head_problems(self.d_model, self.num_heads)


@dataclass
class TalkerParams(ParamsSchema):
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
class VocoderParams(ParamsSchema):
    hidden: int = bounded(48, min=4, max=1024)
    num_layers: int = bounded(3, min=1, max=16)
    kernel_codes: int = bounded(3, min=1, max=16, doc="codes each conv layer sees on its left, itself included")
    lookahead_codes: int = bounded(2, min=0, max=16)
    num_harmonics: int = bounded(8, min=1, max=64)


@dataclass
class AudioEncoderParams(ParamsSchema):
    sample_rate: int = bounded(16000, min=4000, max=48000, doc="the rate the encoder hears (input is resampled to it)")
    frame_samples: int = bounded(160, min=16, max=4800, doc="samples per feature frame")
    num_bands: int = bounded(16, min=2, max=128, doc="filterbank bands per frame")
    block_frames: int = bounded(100, min=4, max=4000, doc="frames per encoder block (attention stays inside one)")
    d_model: int = bounded(32, min=8, max=1024)
    num_layers: int = bounded(2, min=1, max=16)
    num_heads: int = bounded(2, min=1, max=32)
    max_seconds: float = bounded(60.0, min=1.0, max=3600.0, doc="the longest audio one request may carry")

    def problems(self) -> list[tuple[str, str]]:
        out = _head_problems(self.d_model, self.num_heads)
        if self.block_frames % 4:
            out.append(("block_frames", "must be a multiple of 4 (two halvings: a frame pair, then a pooled pair)"))
        return out


@dataclass
class ImageEncoderParams(ParamsSchema):
    patch_size: int = bounded(8, min=2, max=64, doc="pixels per patch side; a patch is one thinker position")
    max_grid: int = bounded(8, min=1, max=64, doc="patches per side at most (a larger picture is scaled down)")
    d_model: int = bounded(32, min=8, max=1024)
    num_layers: int = bounded(1, min=1, max=16)
    num_heads: int = bounded(2, min=1, max=32)
    max_images: int = bounded(8, min=1, max=64, doc="the most pictures and videos one request may carry")
    fps: float = bounded(2.0, min=0.1, max=60.0, doc="a video's frames sampled a second")
    temporal_patch: int = bounded(2, min=1, max=8, doc="sampled frames per video grid step (averaged)")
    max_frames: int = bounded(32, min=1, max=1024, doc="the most frames sampled from one video")

    def problems(self) -> list[tuple[str, str]]:
        return _head_problems(self.d_model, self.num_heads)


PARAMS = {"thinker": ThinkerParams, "talker": TalkerParams, "vocoder": VocoderParams,
          "audio_encoder": AudioEncoderParams, "image_encoder": ImageEncoderParams}


@dataclass(frozen=True)
class NumpySettings:
    """The numpy backend takes no backend settings: weights come from the card's seed."""


SETTINGS = NumpySettings


def _decoder_floats(d_model: int, num_layers: int, num_heads: int, max_positions: int) -> int:
    # per layer two norms, qkv, out, gate_up (d x 4d) and down (2d x d); a final norm; the rotary tables
    return num_layers * (2 * d_model + 10 * d_model * d_model) + d_model + max_positions * (d_model // num_heads)


def weight_bytes(card: Any, params: dict[str, Any]) -> int:
    """The float32 bytes `build` will draw for these validated params (mirrors the components' shapes)."""
    by_role = {spec.role: params[name] for name, spec in card.components.items()}
    th, tk, vc = by_role["thinker"], by_role["talker"], by_role["vocoder"]
    vocab, codes = 261, tk.codebook_size + 3  # the thinker's byte vocabulary; the talker's codes and specials
    floats = _decoder_floats(th.d_model, th.num_layers, th.num_heads, th.max_positions) + (2 * vocab + 6) * th.d_model
    floats += _decoder_floats(tk.d_model, tk.num_layers, tk.num_heads, tk.max_positions) + 2 * codes * tk.d_model
    floats += 2 * th.d_model * tk.d_model + max(1, len(card.voices)) * tk.d_model
    h, k = vc.hidden, vc.kernel_codes
    floats += tk.codebook_size * h + (k + vc.lookahead_codes) * h * h + (vc.num_layers - 1) * k * h * h
    floats += h * (3 + vc.num_harmonics) + 64 * 480 + vc.num_harmonics
    if "audio_encoder" in by_role:
        floats += audio_encoder_floats(by_role["audio_encoder"], th.d_model)
    if "image_encoder" in by_role:
        floats += image_encoder_floats(by_role["image_encoder"], th.d_model)
    return 4 * floats


def audio_encoder_floats(p: AudioEncoderParams, thinker_width: int) -> int:
    """The encoder's filterbank, frame-pair input, block positions, layers, and its projection."""
    d = p.d_model
    floats = p.frame_samples * 2 * p.num_bands + 2 * p.num_bands * d + (p.block_frames // 2) * d
    return floats + p.num_layers * (2 * d + 8 * d * d) + d + d * thinker_width


def image_encoder_floats(p: ImageEncoderParams, thinker_width: int) -> int:
    """The patch embedding, row and column positions, layers, and the projection."""
    d = p.d_model
    return 3 * p.patch_size ** 2 * d + 2 * p.max_grid * d + p.num_layers * (2 * d + 8 * d * d) + d + d * thinker_width
