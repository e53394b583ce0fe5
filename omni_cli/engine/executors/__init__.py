"""Executors by placement: where each component's WorkUnits run (inline, thread, process, ray)."""

from __future__ import annotations

from typing import Any

from ...spec import SpecError, SpecIssue
from ...spec.placement import PlacementSpec
from ..executor import Executor, InlineExecutor
from .failures import WorkerDied
from .worker import WorkerSpec

__all__ = ["WorkerDied", "close_executors", "make_executors", "placement_of"]


def placement_of(program: Any, override: dict[str, PlacementSpec] | None = None) -> dict[str, PlacementSpec]:
    """Each component's placement: the command line's override, else the card's, else inline."""
    card = program.card
    given = override if override is not None else card.placement
    return {name: given.get(name, PlacementSpec()) for name in program.components}


def make_executors(program: Any, placement: dict[str, PlacementSpec], *,
                   ray_address: str | None = None) -> dict[str, Executor]:
    """One executor per component, started (workers built, actors up); closes what it started if one fails."""
    _check_devices(program, placement)
    if ray_address is not None and not any(p.executor == "ray" for p in placement.values()):
        raise SpecError([SpecIssue("<command line>", None, "--ray-address",
                                   "no component is placed on ray (add --placement ray)")])
    executors: dict[str, Executor] = {}
    try:
        for name, component in program.components.items():
            executors[name] = _make(name, component, program, placement[name], placement, ray_address)
    except BaseException:
        close_executors(executors)
        raise
    return executors


def close_executors(executors: dict[str, Executor]) -> None:
    for executor in executors.values():
        executor.close()
    if any(getattr(e, "kind", None) == "ray" for e in executors.values()):
        from .ray import shutdown_ray

        shutdown_ray()


def _make(name: str, component: Any, program: Any, spec: PlacementSpec, placement: dict[str, PlacementSpec],
          ray_address: str | None) -> Executor:
    if spec.executor == "inline":
        return InlineExecutor(component)
    if spec.executor == "thread":
        from .thread import ThreadExecutor

        return ThreadExecutor(name, component)
    worker = WorkerSpec(program.card, dict(program.settings), name, spec.device, spec.num_threads)
    if spec.executor == "process":
        from .process import ProcessExecutor

        return ProcessExecutor(name, worker)
    from .ray import RayExecutor, actor_resources, ensure_ray

    cpus = sum(actor_resources(p)["num_cpus"] for p in placement.values() if p.executor == "ray")
    return RayExecutor(name, worker, spec, ensure_ray(ray_address, cpus))


def _check_devices(program: Any, placement: dict[str, PlacementSpec]) -> None:
    """A component in the engine's process runs on the engine's build: it cannot have a device of its own."""
    card = program.card
    device = {**card.params, **{k: v for k, v in program.settings.items() if v is not None}}.get("device", "cpu")
    issues = []
    for name, spec in placement.items():
        if spec.device is not None and not spec.is_remote and spec.device != device:
            key = f"placement.{name}.device"
            issues.append(SpecIssue(card.source, card.line(key), key,
                                    f"a {spec.executor} component runs on the engine's build (device {device}): "
                                    "place it in a process or on ray to give it a device of its own"))
    if issues:
        raise SpecError(issues)


