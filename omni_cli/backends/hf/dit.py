"""The token2wav DiT as a function of one window: flow-matching ODE from given noise to mel frames."""

# The arithmetic (time points, RK4 stages, guidance) follows transformers' `Qwen2_5OmniToken2WavDiTModel.sample`
# operation for operation, so a window covering the whole utterance reproduces it bit for bit.
#
# The ODE calls the DiT 4 * (num_steps - 1) times on one window, and most of `forward` does not depend on
# the step: the codec embeddings, the speaker encoder over the reference mel (an ECAPA-TDNN, about half
# of a small window's forward), the rotary tables and the block mask. `WindowVelocity` computes those
# once per window — the speaker encoder once per voice — with the same operations on the same inputs,
# and runs only the step-dependent part of `forward` per call; the result is the same tensor. Each decoder
# layer's attention mask (its block window of the block mask) is made once per window too, where
# `DiTDecoderLayer.forward` compares the whole [rows, heads, frames, frames] block mask twice per layer per
# call: `WindowVelocity` runs the layer's operations in its order with that mask made once, as a [frames,
# frames] comparison expanded to the same shape (the same values, so the same attention). The mask is handed
# to attention as the additive float mask (0 where a frame may attend, -inf where not) that torch's
# scaled_dot_product_attention otherwise makes from a boolean one on every call: a `where` over the whole
# [rows, heads, frames, frames] block (8 x 264 frames: 1.50-1.54 s a window with it, 1.17-1.21 s without;
# examples/hf_vocoder_ab.py). The kernel then reads the same mask values, so the output is the same tensor
# (tests/hf/test_hf_token2wav.py).

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

ONE_THIRD = 1 / 3
TWO_THIRDS = 2 / 3


@dataclass(frozen=True)
class ODESettings:
    num_steps: int = 10
    guidance_scale: float = 0.5
    sway_coefficient: float | None = -1.0

    @property
    def is_guided(self) -> bool:
        return self.guidance_scale >= 1e-5


def time_points(settings: ODESettings, device: torch.device, dtype: torch.dtype) -> torch.Tensor:
    points = torch.linspace(0, 1, settings.num_steps, device=device, dtype=dtype)
    if settings.sway_coefficient is not None:
        # sway sampling: more of the steps are spent near t = 0, where the mel takes shape
        points += settings.sway_coefficient * (torch.cos(torch.pi / 2 * points) - 1 + points)
    return points


def integrate_rk4(velocity: Any, initial: torch.Tensor, points: torch.Tensor) -> torch.Tensor:
    """The final state of dy/dt = velocity(t, y) over `points`, with the 3/8-rule RK4 step."""
    value = initial
    for start, end in zip(points[:-1], points[1:], strict=True):
        step = end - start
        k1 = velocity(start, value)
        k2 = velocity(start + step * ONE_THIRD, value + step * k1 * ONE_THIRD)
        k3 = velocity(start + step * TWO_THIRDS, value + step * (k2 - k1 * ONE_THIRD))
        k4 = velocity(end, value + step * (k1 - k2 + k3))
        value = value + (k1 + 3 * (k2 + k3) + k4) * step / 8
    return value


@torch.no_grad()
def speaker_features(dit: Any, ref_mel: torch.Tensor, guided: bool) -> torch.Tensor:
    """The speaker encoder's output for one voice, as `forward` computes it: [2, enc_dim] with guidance
    (the conditioned row, then the row of a zeroed reference), else [1, enc_dim]."""
    if guided:
        ref_mel = torch.cat([ref_mel, torch.zeros_like(ref_mel)], dim=0)
    return dit.input_embed.spk_encoder(ref_mel)


class WindowVelocity:
    """`dit.forward` over one window of `batch` rows, with everything that does not change between ODE
    steps computed once. With guidance the DiT runs [conditioned rows; unconditioned rows] as one batch
    and the velocity is the guided combination, as in transformers' `sample`."""

    def __init__(self, dit: Any, codes: torch.Tensor, cond: torch.Tensor, features: torch.Tensor,
                 settings: ODESettings):
        batch, frames = codes.shape[0], codes.shape[1] * dit.repeats
        self.dit, self.guided, self.guidance = dit, settings.is_guided, settings.guidance_scale
        speaker = cond.unsqueeze(1).repeat(1, frames, 1)  # [batch, frames, enc_emb_dim]
        code_embed = dit.text_embed(codes, drop_code=False)
        if self.guided:
            # features rows: [conditioned, unconditioned] of one voice, spread over the batch's rows
            features = torch.cat([features[:1].expand(batch, -1), features[1:2].expand(batch, -1)], dim=0)
            speaker = torch.cat([speaker, torch.zeros_like(speaker)], dim=0)
            code_embed = torch.cat([code_embed, dit.text_embed(codes, drop_code=True)], dim=0)
        else:
            features = features[:1].expand(batch, -1)
        rows = features.shape[0]
        self.condition = features.unsqueeze(1).repeat(1, frames, 1)
        self.code_embed, self.speaker, self.rows = code_embed, speaker, rows
        like = torch.empty(rows, frames, 1, dtype=speaker.dtype, device=speaker.device)  # shape, dtype, device
        positions = torch.arange(frames, device=speaker.device)[None, :].repeat(rows, 1)
        self.position_embeddings = dit.rotary_embed(like, positions)
        block_diff = dit._create_block_diff(like)  # [rows, heads, frames, frames], a view of one [frames, frames]
        # per decoder layer, what DiTDecoderLayer.forward computes, as the float mask attention makes of it
        self.masks: list[torch.Tensor] = []
        made: dict[tuple[int, int], torch.Tensor] = {}
        for block in dit.transformer_blocks:
            window = (block.look_backward_block, block.look_ahead_block)
            if window not in made:
                one = block_diff[0, 0]
                allowed = (one >= -float(window[0])) & (one <= float(window[1]))
                # in the queries' dtype, as attention converts a boolean mask
                additive = torch.zeros(allowed.shape, dtype=dit.proj_out.weight.dtype, device=speaker.device)
                made[window] = additive.masked_fill_(~allowed, float("-inf")).expand_as(block_diff)
            self.masks.append(made[window])

    def __call__(self, time: torch.Tensor, state: torch.Tensor) -> torch.Tensor:
        dit = self.dit
        time_embedding = dit.time_embed(time.repeat(self.rows))
        hidden = torch.cat([state, state], dim=0) if self.guided else state
        hidden = dit.input_embed.proj(torch.cat((hidden, self.condition, self.code_embed, self.speaker), dim=-1))
        for block, mask in zip(dit.transformer_blocks, self.masks, strict=True):
            # DiTDecoderLayer.forward, operation for operation, with the layer's mask made once per window
            norm, gate_msa, shift_mlp, scale_mlp, gate_mlp = block.attn_norm(hidden, emb=time_embedding)
            attended = block.attn(hidden_states=norm, position_embeddings=self.position_embeddings, attention_mask=mask)
            hidden = hidden + gate_msa.unsqueeze(1) * attended
            norm = block.ff_norm(hidden) * (1 + scale_mlp[:, None]) + shift_mlp[:, None]
            hidden = hidden + gate_mlp.unsqueeze(1) * block.ff(norm)
        out = dit.proj_out(dit.norm_out(hidden, time_embedding))
        if not self.guided:
            return out
        guided, null = torch.chunk(out, 2, dim=0)
        return guided + (guided - null) * self.guidance


@torch.no_grad()
def sample_window(
    dit: Any,
    noise: torch.Tensor,
    codes: torch.Tensor,
    cond: torch.Tensor,
    features: torch.Tensor,
    settings: ODESettings,
) -> torch.Tensor:
    """Mel [B, mel_dim, frames] of `codes` [B, n] from `noise` [B, frames, mel_dim] (frames = n * repeats);
    `cond` [B, enc_emb_dim] is the speaker embedding, `features` the voice's `speaker_features`."""
    frames = noise.shape[1]
    if frames != codes.shape[1] * dit.repeats:
        raise ValueError(f"a DiT window of {codes.shape[1]} codes needs {codes.shape[1] * dit.repeats} noise frames")
    if frames > dit.config.max_position_embeddings:
        raise ValueError(
            f"a DiT window of {frames} mel frames exceeds the DiT's {dit.config.max_position_embeddings} positions"
        )
    velocity = WindowVelocity(dit, codes, cond, features, settings)
    final = integrate_rk4(velocity, noise, time_points(settings, codes.device, velocity.speaker.dtype))
    return final.permute(0, 2, 1)
