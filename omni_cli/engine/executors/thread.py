"""thread: the component runs on its own worker thread in the engine's process, one call at a time.

Its calls overlap the other components' where the work releases the GIL (numpy's and torch's kernels
do). States stay where they are (one process): the tracker only counts the live ones.
"""

from __future__ import annotations

import time
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from ..executor import BatchOutcome, Executor, run_batch
from .handles import StateTracker


def _timed(component: Any, kind: str, inputs: list[Any]) -> BatchOutcome:
    start = time.perf_counter()
    outputs = run_batch(component, kind, inputs)
    return BatchOutcome(outputs, start, time.perf_counter() - start)


class ThreadExecutor(Executor):
    kind = "thread"

    def __init__(self, name: str, component: Any):
        self.name = name
        self.component = component
        self._pool = ThreadPoolExecutor(1, thread_name_prefix=f"omni-{name}")
        self._tracker = StateTracker(ship=False)

    def submit(self, kind: str, inputs: list[Any]) -> Future[BatchOutcome]:
        self._tracker.outbound(inputs)
        return self._pool.submit(_timed, self.component, kind, inputs)

    def live_states(self) -> int:
        self._tracker.take_released()  # nothing to free elsewhere: the states die with their last reference
        return self._tracker.num_live

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)
