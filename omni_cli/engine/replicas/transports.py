"""Where a replica runs: a spawned worker process, or a Ray actor. Each exchange comes back as a future.

Both build the whole engine where they run (`make_engine`, picklable) and hold one `ReplicaServer`.
A replica that dies (a killed process, a killed actor) fails the exchange in flight and every later
one with one line naming it: `replica 2: its worker process died (…)`.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from ..executors.failures import WorkerDied, cancelled_future, first_line, translated
from ..executors.worker import exit_with_parent, portable
from .server import ReplicaServer, Report

START_TIMEOUT_S = 120.0
CLOSE_TIMEOUT_S = 30.0

_server: ReplicaServer | None = None  # in a replica's process: its engine
_start_error: BaseException | None = None


def _start(make_engine: Callable[[], Any], parent: int) -> None:
    global _server, _start_error
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole group: the driver decides
    exit_with_parent(parent)
    try:
        _server = ReplicaServer(make_engine)
    except BaseException as exc:  # reported by the first call, with the card's own message
        _start_error = portable(exc)


def _call(method: str, *args: Any) -> Any:
    if _server is None:
        raise _start_error or RuntimeError("the replica did not start")
    return getattr(_server, method)(*args)


class ProcessReplica:
    """One engine in a spawned child process; calls go down a one-worker process pool's pipe."""

    kind = "process"

    def __init__(self, index: int, make_engine: Callable[[], Any]):
        self.name = f"replica {index + 1}"
        self._dead: WorkerDied | None = None
        self._pool = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"),
                                         initializer=_start, initargs=(make_engine, os.getpid()))
        self._hello = self._pool.submit(_call, "hello")

    def wait_started(self) -> float:
        """Block until the engine is built; returns its clock origin. Raises its start-up error."""
        try:
            return self._hello.result(timeout=START_TIMEOUT_S)
        except FutureTimeout:
            raise WorkerDied(f"{self.name}: its process did not start within {START_TIMEOUT_S:g} s") from None
        except BrokenProcessPool as exc:
            raise self._died(exc) from None

    def exchange(self, commands: list, budget_s: float) -> Future[Report]:
        if self._dead is not None:
            return cancelled_future(self._dead)
        try:
            inner = self._pool.submit(_call, "exchange", commands, budget_s)
        except (BrokenProcessPool, RuntimeError) as exc:
            return cancelled_future(self._died(exc))
        return translated(inner, lambda exc: str(self._died(exc)) if isinstance(exc, BrokenProcessPool) else None)

    def describe(self, exc: BaseException) -> str:
        return str(exc) if isinstance(exc, WorkerDied) else f"{self.name}: {first_line(exc)}"

    def kill(self) -> None:
        """End the process now, as a crash would (tests: its requests fail, the others go on)."""
        for process in list(self._pool._processes.values()):  # the pool keeps its child by pid
            process.kill()

    def close(self) -> None:
        if self._dead is None:
            try:  # the replica's own workers (a component placed in a process) go with it
                self._pool.submit(_call, "close").result(timeout=CLOSE_TIMEOUT_S)
            except Exception:
                self.kill()
        self._pool.shutdown(wait=True, cancel_futures=True)

    def _died(self, exc: BaseException) -> WorkerDied:
        if self._dead is None:
            self._dead = WorkerDied(f"{self.name}: its worker process died ({first_line(exc)})")
        return self._dead


class RayReplica:
    """One engine in a Ray actor (with the resources the card's placement asks for its components)."""

    kind = "ray"

    def __init__(self, index: int, make_engine: Callable[[], Any], resources: dict[str, float], ray):
        self.name = f"replica {index + 1}"
        self._ray = ray
        self._resources = resources
        self._dead: WorkerDied | None = None
        options = {**resources, "max_restarts": 0, "max_task_retries": 0}
        self._actor = ray.remote(ReplicaServer).options(**options).remote(make_engine)
        self._hello = self._actor.hello.remote()

    def wait_started(self) -> float:
        ray = self._ray
        try:
            return ray.get(self._hello, timeout=START_TIMEOUT_S)
        except ray.exceptions.GetTimeoutError:
            ray.kill(self._actor)
            wanted = ", ".join(f"{k}={v:g}" for k, v in self._resources.items())
            raise WorkerDied(f"{self.name}: its Ray actor did not start within {START_TIMEOUT_S:g} s "
                             f"(it asks {wanted})") from None
        except ray.exceptions.RayError as exc:
            raise WorkerDied(f"{self.name}: its Ray actor failed to start: {first_line(self._cause(exc))}") from None

    def exchange(self, commands: list, budget_s: float) -> Future[Report]:
        if self._dead is not None:
            return cancelled_future(self._dead)
        ref = self._actor.exchange.remote(commands, budget_s)
        return translated(ref.future(), self._recognise)

    def describe(self, exc: BaseException) -> str:
        return str(exc) if isinstance(exc, WorkerDied) else f"{self.name}: {first_line(self._cause(exc))}"

    def kill(self) -> None:
        self._ray.kill(self._actor, no_restart=True)

    def close(self) -> None:
        ray = self._ray
        if self._dead is None:
            try:
                ray.get(self._actor.close.remote(), timeout=CLOSE_TIMEOUT_S)
            except Exception:  # noqa: S110 - it is killed next either way
                pass
        ray.kill(self._actor, no_restart=True)

    def _recognise(self, exc: BaseException) -> str | None:
        if isinstance(exc, self._ray.exceptions.RayActorError):
            if self._dead is None:
                self._dead = WorkerDied(f"{self.name}: its Ray actor died ({first_line(exc)})")
            return str(self._dead)
        return None

    def _cause(self, exc: BaseException) -> BaseException:
        if isinstance(exc, self._ray.exceptions.RayTaskError) and exc.cause is not None:
            return exc.cause
        return exc
