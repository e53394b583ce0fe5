"""What the streaming decoder graph carries between chunks: its states' shapes, and each request's values."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class StreamSpec:
    """The streaming graph's states (name, channels, length before the first chunk) and the samples its output
    lags its input by (the last chunk of a sentence emits them)."""

    states: list[tuple[str, int, int]] = field(default_factory=list)
    delay_samples: int = 0
    lead_frames: int = 1  # the fewest frames of a sentence's first chunk (unless it is also its last)

    def to_json(self) -> dict:
        return {"states": [list(s) for s in self.states], "delay_samples": self.delay_samples,
                "lead_frames": self.lead_frames}

    @classmethod
    def from_json(cls, data: dict) -> StreamSpec:
        states = [(str(n), int(c), int(i)) for n, c, i in data["states"]]
        return cls(states, int(data["delay_samples"]), int(data["lead_frames"]))

    def initial(self, rows: int) -> dict[str, np.ndarray]:
        """States before a sentence's first chunk: each convolution's left zero padding, nothing held."""
        return {name: np.zeros((rows, channels, length), np.float32) for name, channels, length in self.states}

    def stacked(self, carries: list[tuple[np.ndarray, ...]]) -> dict[str, np.ndarray]:
        """The states of several requests' chunks, one row each (every carry has the same shapes)."""
        if len(carries) == 1:
            return {name: value for (name, _, _), value in zip(self.states, carries[0], strict=True)}
        return {name: np.concatenate([c[i] for c in carries]) for i, (name, _, _) in enumerate(self.states)}

    @staticmethod
    def row(outputs: list[np.ndarray], row: int) -> tuple[np.ndarray, ...]:
        """One request's states after its chunk, out of a batch's."""
        return tuple(np.ascontiguousarray(value[row:row + 1]) for value in outputs)
