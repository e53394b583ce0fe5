"""The DiT's flow-matching ODE: its time points (sway sampling) and the 3/8-rule RK4 step, as transformers'
`Qwen2_5OmniToken2WavDiTModel.sample` computes them."""

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


def stage_times(start: torch.Tensor, end: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """The times RK4's four stages evaluate the velocity at over [start, end], as `integrate_rk4` computes them."""
    step = end - start
    return start, start + step * ONE_THIRD, start + step * TWO_THIRDS, end


def integrate_rk4(velocity: Any, initial: torch.Tensor, points: torch.Tensor) -> torch.Tensor:
    """The final state of dy/dt = velocity(t, y) over `points`, with the 3/8-rule RK4 step."""
    value = initial
    for start, end in zip(points[:-1], points[1:], strict=True):
        step = end - start
        first, third, two_thirds, last = stage_times(start, end)
        k1 = velocity(first, value)
        k2 = velocity(third, value + step * k1 * ONE_THIRD)
        k3 = velocity(two_thirds, value + step * (k2 - k1 * ONE_THIRD))
        k4 = velocity(last, value + step * (k1 - k2 + k3))
        value = value + (k1 + 3 * (k2 + k3) + k4) * step / 8
    return value
