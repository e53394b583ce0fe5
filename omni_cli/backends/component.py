"""What every component is to the engine: one expert with weights, run a WorkUnit batch at a time."""

from __future__ import annotations

from typing import Any, ClassVar, Protocol


class Component(Protocol):
    """One expert with weights. Holds no per-request state: that lives in caches/states it makes.
    Components subclass their role's protocol (or define every member) to get the defaults below."""

    name: str
    role: str  # thinker | talker | vocoder
    threads: Any = None  # the intra-op threads it chose (`count`, `source`: hf's threads.py); None: not its choice
    row_threads: int = 1  # the threads a batched call's rows split over (hf: rows.py)
    keeps_bytes: ClassVar[bool] = False  # its calls may leave memory resident: the budget asks `kept_bytes` after each

    def weight_bytes(self) -> int: ...

    def run(self, kind: str, inputs: list[Any]) -> list[Any]:
        """Run one WorkUnit for each input, as one batch where the backend can.

        If it raises, the engine runs each input again alone to find the one that broke, so a raising
        batch must leave every request's state as it was. A backend that runs requests one after
        another (their states advance one by one) returns the exception in place of that request's
        output instead.
        """
        ...

    def batch_step_bytes(self, kind: str, step_bytes: list[int]) -> int:
        """What one batched call of `kind` holds at its peak, given each member's step bytes: by default
        they add up. A component that runs a kind's members one after another, or shares a per-call
        workspace across them (hf), knows better (8 prefills need not reserve 8 x what one holds)."""
        return step_bytes[0] if len(step_bytes) == 1 else sum(step_bytes)

    def kept_bytes(self) -> int:
        """Memory the component's calls have left resident since it was built, for the rest of the process
        (a cache that grows per new input shape, up to its bound): the engine keeps each call's growth
        reserved from then on (hf's vocoder: oneDNN's primitive cache)."""
        return 0
