"""process: the component is built from the card in a child process; calls go down a pipe.

A `ProcessPoolExecutor` of one spawned worker gives the pipe, the pickling and the reader thread that
completes each future; its single worker takes calls in order. The worker keeps its requests' states
(a KV cache stays in the child), ignores SIGINT (the engine decides how a run stops, and cancels
between steps), and a child that dies fails the call in flight and every later one with one line.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from ..executor import BatchOutcome, Executor
from .failures import WorkerDied, cancelled_future, first_line, translated
from .handles import StateTracker
from .handoff import DirectHandOff
from .handoff_pipe import PipeSender, PipeStore, ProcessLink
from .worker import ComponentWorker, WorkerSpec, exit_with_parent, portable, thread_environment

START_TIMEOUT_S = 120.0

_worker: ComponentWorker | None = None  # in the child: the one component it serves
_start_error: BaseException | None = None


def _start(spec: WorkerSpec, parent: int, connection: Any = None) -> None:
    global _worker, _start_error
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    exit_with_parent(parent)
    try:
        sender = PipeSender(connection) if spec.handoff == "send" else None
        store = PipeStore(connection) if spec.handoff == "receive" else None
        _worker = ComponentWorker(spec, sender, store)
    except BaseException as exc:  # reported by the first call, with the card's own message
        _start_error = portable(exc)


def _call(method: str, *args: Any) -> Any:
    if _worker is None:
        raise _start_error or RuntimeError("the worker did not start")
    return getattr(_worker, method)(*args)


class ProcessExecutor(Executor):
    kind = "process"

    def __init__(self, name: str, spec: WorkerSpec, link: ProcessLink | None = None, handoff_from: Any = None,
                 *, wait: bool = True):
        """link: the pipe of a direct hand-off (spec.handoff says which end); handoff_from: the talker's,
        the driver's thinker (its stand-ins, handoff.py). wait=False: return once the worker is spawned, and
        let `wait_started` wait for it to build (workers of one component start side by side)."""
        self.name = name
        self._tracker = StateTracker(ship=True)
        self._dead: WorkerDied | None = None
        self._link, self._handoff_from = link, handoff_from
        connection = None if link is None else link.send_end if spec.handoff == "send" else link.receive_end
        saved = {k: os.environ.get(k) for k in thread_environment(spec.num_threads)}
        # the child reads the thread variables when it imports numpy, before our initializer runs
        os.environ.update(thread_environment(spec.num_threads))
        try:
            self._pool = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"),
                                             initializer=_start, initargs=(spec, os.getpid(), connection))
            first = self._pool.submit(_call, "live_states", [])
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value
        self._first = first
        if wait:
            self.wait_started()

    def wait_started(self) -> None:
        """Until the worker has built its component (its error, if it could not: the card's own message)."""
        try:
            self._first.result(timeout=START_TIMEOUT_S)
        except BaseException:
            self._pool.shutdown(wait=False, cancel_futures=True)
            raise

    def submit(self, kind: str, inputs: list[Any]) -> Future[BatchOutcome]:
        if self._dead is not None:
            return cancelled_future(self._dead)
        try:
            inner = self._pool.submit(_call, "run", kind, self._tracker.outbound(inputs), self._tracker.take_released(),
                                      self._dropped())
        except (BrokenProcessPool, RuntimeError) as exc:
            return cancelled_future(self._died(exc))
        if self._link is not None and self._handoff_from is None:  # the thinker's: track the handles it gives
            self._link.watch(inner)
        return translated(inner, self._describe)

    def view(self, component: Any) -> Any:
        return component if self._handoff_from is None else DirectHandOff(component, self._handoff_from)

    def live_states(self) -> int:
        return self._pool.submit(_call, "live_states", self._tracker.take_released(), self._dropped()).result()

    def _dropped(self) -> list[int]:
        """The talker's: the hand-off pairs whose handles died in the driver."""
        return self._link.take_released() if self._link is not None and self._handoff_from is not None else []

    def kill(self) -> None:
        """End the worker now, as a crash would (tests: a request in flight must fail, not hang)."""
        for process in list(self._pool._processes.values()):  # the pool keeps its children by pid
            process.kill()

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)

    def failure(self) -> str | None:
        # the pool's manager thread marks it broken as soon as its child exits, before any call notices
        broken = getattr(self._pool, "_broken", False)
        if self._dead is None and broken:
            self._died(RuntimeError(broken if isinstance(broken, str) else "the process pool is broken"))
        return None if self._dead is None else str(self._dead)

    def _describe(self, exc: BaseException) -> str | None:
        if isinstance(exc, BrokenProcessPool):
            return str(self._died(exc))
        return None

    def _died(self, exc: BaseException) -> WorkerDied:
        if self._dead is None:
            self._dead = WorkerDied(f"{self.name}: its worker process died ({first_line(exc)})")
        return self._dead
