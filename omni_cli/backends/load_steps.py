"""How a backend's build reports where it is, and how it says it cannot be used here."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


class BackendUnavailable(RuntimeError):
    """A backend cannot be used here (an optional dependency is missing, a path is wrong)."""


@dataclass(frozen=True)
class LoadStep:
    """Where a backend's build is: a phase (`importing torch`), and how far into it when it can count."""

    phase: str
    done: int | None = None
    total: int | None = None
    unit: str = ""  # what done/total count: "tensors", "voices"
    note: bool = False  # a line to keep, not a phase that passes (a part that falls back to a slower path)


LoadReporter = Callable[[LoadStep], None]  # the caller renders; a build without one reports nothing


def no_report(step: LoadStep) -> None:
    """The reporter of a build nobody watches."""
