"""The Executor seam: one batch of one component's WorkUnits, run somewhere, its result collected later.

The engine (the driver) keeps at most one call in flight per component, reserves and refunds the
memory budget around it, emits trace events and folds outputs into loops; an executor only runs.
`InlineExecutor` runs in the engine's thread (the default; the engine calls its `run` directly);
thread, process and Ray executors implement the same two calls.
"""

from __future__ import annotations

import time
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any


@dataclass(slots=True)
class BatchOutcome:
    """What one call produced: one entry per input, each the output or the Exception of that request."""

    outputs: list
    start_s: float  # time.perf_counter() when the call started, measured where it ran
    dur_s: float


@dataclass(slots=True)
class Call:
    """A batch the engine handed to an executor: its entries (scheduler.Entry), what it reserved to refund,
    and its component's id, to fold when it completes."""

    entries: list
    reserved: int
    component_id: int


def run_batch(component: Any, kind: str, inputs: list) -> list:
    """The call itself. If a batch raises, each input runs again alone to find the one that broke
    (a raising batch leaves every request's state as it was: see backends/base.py's Component.run)."""
    try:
        outputs = component.run(kind, inputs)
    except Exception as exc:
        if len(inputs) == 1:
            return [exc]
        return [run_batch(component, kind, [one])[0] for one in inputs]
    if len(outputs) != len(inputs):  # a broken component: its batch fails, the engine goes on
        error = RuntimeError(f"component returned {len(outputs)} outputs for {len(inputs)}")
        return [error] * len(inputs)
    return outputs


class Executor:
    """Runs batches on one component; the engine keeps at most one call in flight on it."""

    kind = "inline"  # where it runs: inline | thread | process | ray (a placement's executor)
    inline = False  # True: `run` returns the outcome in the caller's thread, and the engine calls it, not `submit`

    def submit(self, kind: str, inputs: list) -> Future[BatchOutcome]:
        raise NotImplementedError

    def close(self) -> None:
        """Release what the executor holds (threads, processes, actors); idempotent."""

    def failure(self) -> str | None:
        """Why this executor cannot run calls any more (its worker process or actor is gone), else None.
        Cheap and callable from any thread: a server's /health asks it without making a call."""
        return None

    def live_states(self) -> int:
        """Per-request component states held where it runs (KV caches, vocoder contexts): 0 when every
        request's state was released. Where it runs in the engine's process, the loops hold them: 0."""
        return 0

    def kill(self) -> None:
        """End its workers now, as a crash would (tests of a worker that dies); the engine's process: nothing."""

    def view(self, component: Any) -> Any:
        """The component as the driver's loops and feeds use it (a talker whose thinker's states stay in the
        workers gives its hand-off in a form the talker's worker completes: executors/handoff.py)."""
        return component


class InlineExecutor(Executor):
    """Runs in the caller's thread: the engine calls `run` and folds the outcome at once; `submit` returns
    an already-done future, for callers that want the seam's shape."""

    inline = True

    def __init__(self, component: Any):
        self.component = component

    def run(self, kind: str, inputs: list) -> BatchOutcome:
        """The call, here and now (no Future: building and settling one costs more than a toy step's fold)."""
        start = time.perf_counter()
        outputs = run_batch(self.component, kind, inputs)
        return BatchOutcome(outputs, start, time.perf_counter() - start)

    def submit(self, kind: str, inputs: list) -> Future[BatchOutcome]:
        future: Future[BatchOutcome] = Future()
        future.set_result(self.run(kind, inputs))
        return future
