"""An append-only, closeable sequence: how loops and ops pass data inside one request."""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class Channel(Generic[T]):
    """Items are appended by one producer; readers index them and listeners hear each one."""

    def __init__(self, name: str):
        self.name = name
        self.items: list[T] = []
        self.is_closed = False
        # items a pacing reader has finished with; a producer that keeps in step waits for it (None: no one paces)
        self.num_consumed: int | None = None
        self._listeners: list[Callable[[T | None], None]] = []

    def __len__(self) -> int:
        return len(self.items)

    def listen(self, fn: Callable[[T | None], None]) -> None:
        """`fn(item)` after each put; `fn(None)` once when the channel closes."""
        self._listeners.append(fn)

    def put(self, item: T) -> None:
        if self.is_closed:
            raise RuntimeError(f"channel {self.name!r} is closed")
        self.items.append(item)
        for fn in self._listeners:
            fn(item)

    def close(self) -> None:
        if self.is_closed:
            return
        self.is_closed = True
        for fn in self._listeners:
            fn(None)


class ARChannel(Channel[T]):
    """The output of an AR loop: one ARItem per step (what the next loop's feed reads)."""
