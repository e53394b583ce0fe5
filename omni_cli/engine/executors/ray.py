"""ray: the component is one Ray actor with its own resources; each call is an actor task.

Ray is imported here only, when a card or `--placement` asks for it (the `ray` extra). Without an
address omni starts a local Ray sized to this machine; `--ray-address auto|HOST:PORT` joins a cluster.
The actor keeps its requests' states; an actor that dies fails the call in flight and every later one.
"""

from __future__ import annotations

import logging
import os
from concurrent.futures import Future
from typing import Any

from ...backends.base import BackendUnavailable
from ...extras import install_command
from ...spec.placement import PlacementSpec
from ..executor import BatchOutcome, Executor
from .failures import WorkerDied, cancelled_future, first_line, translated
from .handles import StateTracker
from .handoff import DirectHandOff
from .worker import ComponentWorker, WorkerSpec, thread_environment

START_TIMEOUT_S = 120.0
_started_here = False  # omni started this Ray (and stops it when its engines close)


def ray_module():
    try:
        import ray  # lazily: only a run that places a component on Ray needs it
    except ImportError:
        raise BackendUnavailable(f"placement ray needs Ray: {install_command('ray')}") from None
    return ray


def ensure_ray(address: str | None, num_cpus: float):
    """Ray, started (a local one with at least `num_cpus` CPUs) or joined (`address`) once per process."""
    global _started_here
    ray = ray_module()
    if ray.is_initialized():
        return ray
    quiet = {"include_dashboard": False, "log_to_driver": False, "logging_level": logging.ERROR}
    if address is not None:
        ray.init(address=address, **quiet)
    else:  # CPUs are Ray's bookkeeping: three 1-CPU actors on a 2-core machine still need room to start
        ray.init(num_cpus=max(os.cpu_count() or 1, int(num_cpus + 0.999)), **quiet)
        _started_here = True
    return ray


def shutdown_ray() -> None:
    global _started_here
    if _started_here:
        ray_module().shutdown()
        _started_here = False


def actor_resources(placement: PlacementSpec) -> dict[str, float]:
    return {"num_cpus": 1.0 if placement.num_cpus is None else placement.num_cpus,
            "num_gpus": 0.0 if placement.num_gpus is None else placement.num_gpus}


class _ObjectStoreSender:
    """The thinker's actor: each (hidden, embeds) pair into Ray's object store, owned by the actor."""

    def keep(self, hidden: Any, embeds: Any) -> Any:
        return ray_module().put((hidden, embeds))


class _ObjectStoreFetch:
    """The talker's actor: pairs fetched by reference, from the object store (never through the driver)."""

    def fetch(self, refs: list[Any]) -> dict[Any, tuple[Any, Any]]:
        return dict(zip(refs, ray_module().get(list(refs)), strict=True))

    def release(self, refs: list[Any]) -> None:
        """Nothing: Ray counts references, and a pair goes when no handle names it."""

    def __len__(self) -> int:
        return 0  # held by Ray, not here


class RayComponentWorker(ComponentWorker):
    """A component worker as a Ray actor; with a direct hand-off, pairs travel as object references."""

    def __init__(self, spec: WorkerSpec):
        super().__init__(spec, _ObjectStoreSender() if spec.handoff == "send" else None,
                         _ObjectStoreFetch() if spec.handoff == "receive" else None)


class RayExecutor(Executor):
    kind = "ray"

    def __init__(self, name: str, spec: WorkerSpec, placement: PlacementSpec, ray, handoff_from: Any = None):
        """handoff_from: the talker's, with a direct hand-off: the driver's thinker (its stand-ins, handoff.py)."""
        self.name = name
        self._ray = ray
        self._handoff_from = handoff_from
        self._tracker = StateTracker(ship=True)
        self._dead: WorkerDied | None = None
        resources = actor_resources(placement)
        options: dict[str, Any] = {**resources, "max_restarts": 0, "max_task_retries": 0}
        if spec.num_threads:
            options["runtime_env"] = {"env_vars": thread_environment(spec.num_threads)}
        self._actor = ray.remote(RayComponentWorker).options(**options).remote(spec)
        wanted = ", ".join(f"{k}={v:g}" for k, v in resources.items())
        try:
            ray.get(self._actor.live_states.remote([]), timeout=START_TIMEOUT_S)
        except ray.exceptions.GetTimeoutError:
            ray.kill(self._actor)
            have = ", ".join(f"{k}={v:g}" for k, v in ray.available_resources().items() if k in ("CPU", "GPU"))
            raise RuntimeError(f"{name}: its Ray actor did not start within {START_TIMEOUT_S:g} s "
                               f"(it asks {wanted}; the cluster has {have or 'nothing'} free)") from None
        except ray.exceptions.RayError as exc:
            cause = exc.cause if isinstance(exc, ray.exceptions.RayTaskError) else exc
            raise RuntimeError(f"{name}: its Ray actor failed to start: {first_line(cause)}") from None

    def submit(self, kind: str, inputs: list[Any]) -> Future[BatchOutcome]:
        if self._dead is not None:
            return cancelled_future(self._dead)
        ref = self._actor.run.remote(kind, self._tracker.outbound(inputs), self._tracker.take_released())
        return translated(ref.future(), self._describe)

    def view(self, component: Any) -> Any:
        return component if self._handoff_from is None else DirectHandOff(component, self._handoff_from)

    def live_states(self) -> int:
        return self._ray.get(self._actor.live_states.remote(self._tracker.take_released()))

    def kill(self) -> None:
        """End the actor now, as a crash would (tests: a request in flight must fail, not hang)."""
        self._ray.kill(self._actor, no_restart=True)

    def close(self) -> None:
        self._ray.kill(self._actor, no_restart=True)

    def failure(self) -> str | None:
        return None if self._dead is None else str(self._dead)  # known once a call has failed

    def _describe(self, exc: BaseException) -> str | None:
        if isinstance(exc, self._ray.exceptions.RayActorError):
            if self._dead is None:
                self._dead = WorkerDied(f"{self.name}: its Ray actor died ({first_line(exc)})")
            return str(self._dead)
        return None
