"""Per-request component state where the component runs: the driver holds handles, the worker the states.

A loop makes a request's state in the driver (`new_cache`, `new_state`: empty, cheap) and hands it to
every step in its input's `state_field`. A placed component in another process must not get a copy
each step (its steps mutate the state: a KV cache grows, a vocoder carries its left context), so the
driver's `StateTracker` ships the fresh state once, on its first step, and a `StateRef` after that;
the worker's `StateTable` keeps the live one. When the loop drops its state (finished, cancelled,
failed: every end sets it to None), the driver object dies, its key goes on a release list, and the
next call to that worker frees the worker's copy. Nothing in the loops or the engine knows.
"""

from __future__ import annotations

import copy
import weakref
from collections import deque
from typing import Any

from ...backends.base import StepInput


def drain(released: deque[int]) -> list[int]:
    """Everything appended so far, in order, taken out: popleft one by one, since finalizers on other threads
    may append meanwhile (a copy then clear() could lose one)."""
    out = []
    while released:
        out.append(released.popleft())
    return out


class StateRef:
    """A request's state on the worker, by key (the worker kept it from the state's first step)."""

    __slots__ = ("key",)

    def __init__(self, key: int):
        self.key = key

    def __reduce__(self):
        return StateRef, (self.key,)


class FirstUse:
    """A state's first trip to the worker: its key and the fresh state itself."""

    __slots__ = ("key", "state")

    def __init__(self, key: int, state: Any):
        self.key, self.state = key, state

    def __reduce__(self):
        return FirstUse, (self.key, self.state)


def state_field(item: Any) -> str | None:
    """The name of the field that holds a step input's per-request state (None: the input has none); inputs
    that carry none need not be StepInputs (a sentence's text, a frames chunk)."""
    return item.state_field if isinstance(item, StepInput) else None


class StateTracker:
    """Driver side, one per placed component: which states are live, and which died since the last call."""

    def __init__(self, *, ship: bool):
        self.ship = ship  # another process: send handles; same process: the states themselves are shared
        self._keys: dict[int, int] = {}  # id(state) -> key, while the state lives
        self._released: deque[int] = deque()  # appended by finalizers, which may run on any thread
        self._next_key = 0

    @property
    def num_live(self) -> int:
        return len(self._keys)

    def outbound(self, inputs: list[Any]) -> list[Any]:
        """The inputs as the worker takes them: each state by key once the worker has it."""
        out = inputs if not self.ship else list(inputs)
        for i, item in enumerate(inputs):
            name = state_field(item)
            if name is None:
                continue
            state = getattr(item, name)
            if state is None:
                continue
            key = self._keys.get(id(state))
            first = key is None
            if first:
                key = self._track(state)
            if self.ship:
                sent = copy.copy(item)  # the driver's input keeps its own state object
                setattr(sent, name, FirstUse(key, state) if first else StateRef(key))
                out[i] = sent
        return out

    def take_released(self) -> list[int]:
        return drain(self._released)

    def _track(self, state: Any) -> int:
        key = self._next_key
        self._next_key += 1
        self._keys[id(state)] = key
        try:
            weakref.finalize(state, self._forget, id(state), key)
        except TypeError:  # a state kind that cannot be watched would leak on the worker: say so now
            del self._keys[id(state)]
            raise TypeError(f"per-request state {type(state).__name__} cannot be weak-referenced, "
                            "so a placed component could not release it") from None
        return key

    def _forget(self, state_id: int, key: int) -> None:
        self._keys.pop(state_id, None)
        self._released.append(key)


class StateTable:
    """Worker side: the live states of this component's requests, by key."""

    def __init__(self):
        self._states: dict[int, Any] = {}

    def __len__(self) -> int:
        return len(self._states)

    def release(self, keys: list[int]) -> None:
        for key in keys:
            self._states.pop(key, None)  # a request that ended before its first step never came here

    def inbound(self, inputs: list[Any]) -> list[Any]:
        """The inputs with each handle replaced by the live state it names (in place: these are copies)."""
        for item in inputs:
            name = state_field(item)
            if name is None:
                continue
            held = getattr(item, name)
            if held.__class__ is FirstUse:
                self._states[held.key] = held.state
                setattr(item, name, held.state)
            elif held.__class__ is StateRef:
                state = self._states.get(held.key)
                if state is None:
                    raise RuntimeError(f"request state {held.key} was released before its step ran")
                setattr(item, name, state)
        return inputs
