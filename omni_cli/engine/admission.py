"""Memory admission: bytes are reserved before work runs and refunded however it ends."""

from __future__ import annotations


class AdmissionError(RuntimeError):
    """A request can never fit the engine's memory budget."""


def mib(n: int) -> str:
    return f"{n / (1 << 20):.1f} MiB"


class MemoryBudget:
    def __init__(self, capacity_bytes: int):
        if capacity_bytes <= 0:
            raise ValueError("memory budget must be positive")
        self.capacity = capacity_bytes
        self.reserved = 0
        self.peak_reserved = 0

    @property
    def free(self) -> int:
        return self.capacity - self.reserved

    def try_reserve(self, n: int) -> bool:
        if n < 0:
            raise ValueError("cannot reserve a negative number of bytes")
        if n > self.free:
            return False
        self.reserved += n
        self.peak_reserved = max(self.peak_reserved, self.reserved)
        return True

    def release(self, n: int) -> None:
        if n > self.reserved:
            raise RuntimeError(f"releasing {n} bytes but only {self.reserved} are reserved")
        self.reserved -= n
