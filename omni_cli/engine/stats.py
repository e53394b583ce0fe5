"""What the engine counts as it runs: ticks, WorkUnits, batched calls, time inside and outside components."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class EngineStats:
    ticks: int = 0
    work_units: int = 0
    batched_calls: int = 0
    tick_s: float = 0.0  # wall time inside step()
    executor_s: float = 0.0  # of which handed to executors: inside submit() (inline: the call) or waiting on one
    component_s: float = 0.0  # time inside component calls, measured where they ran (may overlap in time)

    @property
    def overhead_s(self) -> float:
        """The engine's own time: deciding, reserving, folding, tracing (not running or waiting on components)."""
        return self.tick_s - self.executor_s

    @property
    def overhead_per_unit_s(self) -> float:
        """Engine time not spent inside components, per WorkUnit."""
        return self.overhead_s / self.work_units if self.work_units else 0.0
