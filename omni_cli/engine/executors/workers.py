"""Several workers of one component: a batch is split by request, each request's steps go to one worker.

A placement with `workers: N` (process only) starts N workers of the component, each a `ProcessExecutor`
with its own copy of the weights. A request's state lives in the worker that ran its first step (a vocoder
carries its noise and left context there, a decoder its KV cache), so each request is given a home at its
first step: the worker with the fewest live requests. A batch the engine submits is split by home, the
parts run at once, and one outcome comes back in the batch's order: its start is the earliest part's,
its duration runs to the latest part's end. The engine still keeps one call in flight per component; the
parts of that call are what run side by side. A worker that dies fails its own requests (its part of each
batch), not the others'.
"""

from __future__ import annotations

import threading
import weakref
from concurrent.futures import Future
from typing import Any

from ..executor import BatchOutcome, Executor
from .handles import state_field


class WorkersExecutor(Executor):
    """N started executors of one component (the module's note): `submit` splits a batch by each request's home."""

    def __init__(self, name: str, workers: list[Any]):
        if not workers:
            raise ValueError(f"{name}: at least one worker")
        self.name = name
        self.kind = workers[0].kind
        self.workers = workers
        self._home: dict[int, int] = {}  # id(state) -> worker, while the state lives
        self._live = [0] * len(workers)  # live states per worker
        self._lock = threading.RLock()  # finalizers run on any thread, this one included (a GC inside home_of)

    def home_of(self, item: Any) -> int:
        """The worker that holds this input's request state (given one, the least loaded, at its first step);
        an input without state goes to the least loaded worker."""
        field = state_field(item)
        state = None if field is None else getattr(item, field)
        with self._lock:
            if state is None:
                return min(range(len(self.workers)), key=self._live.__getitem__)
            home = self._home.get(id(state))
            if home is None:
                home = min(range(len(self.workers)), key=self._live.__getitem__)
                self._home[id(state)] = home
                self._live[home] += 1
                weakref.finalize(state, self._forget, id(state), home)
        return home

    def _forget(self, state_id: int, home: int) -> None:
        with self._lock:
            if self._home.pop(state_id, None) is not None:
                self._live[home] -= 1

    def submit(self, kind: str, inputs: list[Any]) -> Future[BatchOutcome]:
        parts: dict[int, list[int]] = {}
        for position, item in enumerate(inputs):
            parts.setdefault(self.home_of(item), []).append(position)
        if len(parts) == 1:
            (home,) = parts
            return self.workers[home].submit(kind, inputs)
        futures = [(positions, self.workers[home].submit(kind, [inputs[p] for p in positions]))
                   for home, positions in parts.items()]
        combined: Future[BatchOutcome] = Future()
        pending = [len(futures)]
        lock = threading.Lock()

        def part_done(_: Future) -> None:
            with lock:
                pending[0] -= 1
                if pending[0]:
                    return
            try:
                combined.set_result(_combine(len(inputs), futures))
            except BaseException as exc:  # every part failed: the call did, as one worker's would
                combined.set_exception(exc)

        for _, future in futures:
            future.add_done_callback(part_done)
        return combined

    def view(self, component: Any) -> Any:
        return self.workers[0].view(component)

    def live_states(self) -> int:
        return sum(worker.live_states() for worker in self.workers)

    def kill(self) -> None:
        for worker in self.workers:
            worker.kill()

    def failure(self) -> str | None:
        reasons = [r for worker in self.workers if (r := worker.failure())]
        return "; ".join(reasons) or None

    def close(self) -> None:
        for worker in self.workers:
            worker.close()


def _combine(size: int, futures: list[tuple[list[int], Future]]) -> BatchOutcome:
    """One outcome in the batch's order; a part that raised (its worker died) fails its own requests."""
    outputs: list[Any] = [None] * size
    starts, ends = [], []
    for positions, future in futures:
        try:
            outcome = future.result()
        except Exception as exc:
            for p in positions:
                outputs[p] = exc
            continue
        for p, output in zip(positions, outcome.outputs, strict=True):
            outputs[p] = output
        starts.append(outcome.start_s)
        ends.append(outcome.start_s + outcome.dur_s)
    if not starts:
        raise next(o for o in outputs if isinstance(o, Exception))
    return BatchOutcome(outputs, min(starts), max(ends) - min(starts))
