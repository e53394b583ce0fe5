"""The token2wav DiT as a function of one window: flow-matching ODE from given noise to mel frames."""

# The arithmetic (time points, RK4 stages, guidance) follows transformers' `Qwen2_5OmniToken2WavDiTModel.sample`
# operation for operation, so a window covering the whole utterance reproduces it bit for bit.

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
def sample_window(
    dit: Any,
    noise: torch.Tensor,
    codes: torch.Tensor,
    cond: torch.Tensor,
    ref_mel: torch.Tensor,
    settings: ODESettings,
) -> torch.Tensor:
    """Mel [1, mel_dim, frames] of `codes` [1, n] from `noise` [1, frames, mel_dim] (frames = n * repeats)."""
    frames = noise.shape[1]
    if frames != codes.shape[1] * dit.repeats:
        raise ValueError(f"a DiT window of {codes.shape[1]} codes needs {codes.shape[1] * dit.repeats} noise frames")
    if frames > dit.config.max_position_embeddings:
        raise ValueError(
            f"a DiT window of {frames} mel frames exceeds the DiT's {dit.config.max_position_embeddings} positions"
        )
    speaker = cond.unsqueeze(1).repeat(1, frames, 1)
    guidance = settings.guidance_scale
    guided_run = guidance >= 1e-5

    def velocity(time: torch.Tensor, state: torch.Tensor) -> torch.Tensor:
        # with guidance: one batch of [conditioned, unconditioned] rows
        out = dit(hidden_states=state, quantized_code=codes, speaker_embedding=speaker, condition_vector=ref_mel,
                  time_step=time, apply_cfg=guided_run)
        if not guided_run:
            return out
        guided, null = torch.chunk(out, 2, dim=0)
        return guided + (guided - null) * guidance

    final = integrate_rk4(velocity, noise, time_points(settings, codes.device, speaker.dtype))
    return final.permute(0, 2, 1)
