"""Intra-op threads on purpose: each hf component runs its calls with a thread count of its own.

torch's default is one OpenMP thread per core, per process, for every call. That is what oversubscribes
a machine: components placed in threads or processes, replicas, or other programs on the same cores
each start a team as wide as the machine, and an OpenMP team whose cores are busy waits at every
barrier (on a shared machine a vocoder chunk then takes many times what it takes with one thread).
So each component names its count: its own `num_threads`, else OMP_NUM_THREADS when the
environment sets it (how `placement.X.num_threads` reaches a process or Ray worker, or the operator's
own), else the card's `params.num_threads`, else DEFAULT_THREADS, chosen by measurement with
`examples/hf_threads.py` (docs/performance.md).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from functools import wraps
from typing import Any, TypeVar

import torch

DEFAULT_THREADS = 1

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class Threads:
    """A component's intra-op thread count and where it came from."""

    count: int
    source: str  # component params | card params | OMP_NUM_THREADS | default

    def describe(self) -> str:
        return f"{self.count} ({self.source})"


def choose_threads(component: int, card: int, environ: dict[str, str] | None = None) -> Threads:
    """The count a component runs with: its own `num_threads`, the environment's, the card's, the default
    (0 means "not set" at each level; so does an OMP_NUM_THREADS that is not a positive integer)."""
    if component:
        return Threads(component, "component params")
    env = (os.environ if environ is None else environ).get("OMP_NUM_THREADS", "").strip()
    if env.isdigit() and int(env) > 0:
        return Threads(int(env), "OMP_NUM_THREADS")
    if card:
        return Threads(card, "card params")
    return Threads(DEFAULT_THREADS, "default")


class intra_op_threads:
    """torch's intra-op thread count set to `count` for the block and put back after it (a caller's own
    setting is left as it was); setting an unchanged count is skipped."""

    def __init__(self, count: int):
        self.count = count

    def __enter__(self) -> None:
        self._before = torch.get_num_threads()
        if self._before != self.count:
            torch.set_num_threads(self.count)

    def __exit__(self, *exc: object) -> None:
        if torch.get_num_threads() != self._before:
            torch.set_num_threads(self._before)


def with_threads(method: F) -> F:
    """A component method run with the component's `threads.count` intra-op threads."""

    @wraps(method)
    def run(self: Any, *args: Any, **kwargs: Any) -> Any:
        with intra_op_threads(self.threads.count):
            return method(self, *args, **kwargs)

    return run  # type: ignore[return-value]
