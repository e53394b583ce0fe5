"""What the engine counts as it runs: ticks, WorkUnits, batched calls, time inside and outside components."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class EngineStats:
    ticks: int = 0
    work_units: int = 0
    batched_calls: int = 0
    tick_s: float = 0.0  # wall time inside step()
    component_s: float = 0.0  # of which inside component.run

    @property
    def overhead_per_unit_s(self) -> float:
        """Engine time not spent inside components, per WorkUnit."""
        return (self.tick_s - self.component_s) / self.work_units if self.work_units else 0.0
