"""Memory admission: bytes are reserved before work runs and refunded however it ends."""

from __future__ import annotations

from collections.abc import Iterable

from ..backends.base import Component


class AdmissionError(RuntimeError):
    """A request can never fit the engine's memory budget."""


def mib(n: int) -> str:
    return f"{n / (1 << 20):.1f} MiB"


class MemoryBudget:
    def __init__(self, capacity_bytes: int, components: Iterable[Component] = ()):
        """components: their `kept_bytes` now is the baseline; what their calls keep beyond it is reserved."""
        if capacity_bytes <= 0:
            raise ValueError("memory budget must be positive")
        self.capacity = capacity_bytes
        self.reserved = 0
        self.peak_reserved = 0
        self._kept = {id(c): c.kept_bytes() for c in components}
        # components that keep nothing (`keeps_bytes` False): no call after each of theirs
        self._never_keep = {id(c) for c in components if not c.keeps_bytes}

    @property
    def free(self) -> int:
        return self.capacity - self.reserved

    def try_reserve(self, n: int) -> bool:
        if n < 0:
            raise ValueError("cannot reserve a negative number of bytes")
        if n > self.capacity - self.reserved:  # self.free, without the property's call (per WorkUnit)
            return False
        self.reserved += n
        self.peak_reserved = max(self.peak_reserved, self.reserved)
        return True

    def release(self, n: int) -> None:
        if n > self.reserved:
            raise RuntimeError(f"releasing {n} bytes but only {self.reserved} are reserved")
        self.reserved -= n

    def keep(self, component: Component) -> None:
        """After a call: what the component's calls have kept resident since this budget began (a cache
        grown by a new input shape) stays reserved for good, past the capacity if it must (the
        memory is taken). Its step reserved it while the call ran."""
        if id(component) in self._never_keep:
            return
        kept = component.kept_bytes()
        grown = kept - self._kept.get(id(component), 0)
        if grown > 0:
            self._kept[id(component)] = kept
            self.reserved += grown
            self.peak_reserved = max(self.peak_reserved, self.reserved)

