"""Executors by placement: where each component's WorkUnits run (inline, thread, process, ray)."""

from __future__ import annotations

from typing import Any

from ...spec import SpecError, SpecIssue
from ...spec.placement import PlacementSpec
from ..executor import Executor, InlineExecutor
from .failures import WorkerDied
from .worker import WorkerSpec

__all__ = ["WorkerDied", "close_executors", "make_executors", "placement_of", "threads_as_placed"]


def placement_of(program: Any, override: dict[str, PlacementSpec] | None = None) -> dict[str, PlacementSpec]:
    """Each component's placement: the command line's override, else the card's, else inline."""
    card = program.card
    given = override if override is not None else card.placement
    return {name: given.get(name, PlacementSpec()) for name in program.components}


def threads_as_placed(program: Any, override: str | None = None) -> dict[str, dict[str, Any]]:
    """Each component's intra-op threads where it runs (`override`: `--placement`'s text over the card's): a
    process or Ray worker given `num_threads` by its placement gets it as OMP_NUM_THREADS, which only the
    component's own `num_threads` overrides; with `workers: N`, "workers" says how many run them."""
    from ...spec.placement import override_placement

    threads = program.threads()
    given = None if override is None else override_placement(program.card.placement, override,
                                                              list(program.components))
    for name, spec in placement_of(program, given).items():
        if name not in threads:
            continue
        if spec.is_remote and spec.num_threads and threads[name]["source"] != "component params":
            threads[name] = {"count": spec.num_threads, "source": f"placement ({spec.executor} worker)"}
        if spec.workers > 1:
            threads[name] = {**threads[name], "workers": spec.workers}
    return threads


def make_executors(program: Any, placement: dict[str, PlacementSpec], *, ray_address: str | None = None,
                   direct_handoff: bool = True) -> dict[str, Executor]:
    """One executor per component, started (workers built, actors up); closes what it started if one fails.

    direct_handoff: with the two sides of the program's state hand-off (the thinker and the talker) both in
    processes or both on Ray, the sender's states go from its worker to the receiver's, not through the driver
    (handoff.py); False sends them through the driver."""
    _check_devices(program, placement)
    if ray_address is not None and not any(p.executor == "ray" for p in placement.values()):
        raise SpecError([SpecIssue("<command line>", None, "--ray-address",
                                   "no component is placed on ray (add --placement ray)")])
    pair = _handoff_pair(program, placement) if direct_handoff else None
    _check_workers(program, placement, pair)
    link = None
    if pair is not None and placement[pair[0]].executor == "process":
        from .handoff_pipe import ProcessLink

        link = ProcessLink()
    executors: dict[str, Executor] = {}
    try:
        for name, component in program.components.items():
            role = None if pair is None else "send" if name == pair[0] else "receive" if name == pair[1] else None
            sender = program.components[pair[0]] if role == "receive" else None
            executors[name] = _make(name, component, program, placement[name], placement, ray_address, role, link,
                                    sender)
    except BaseException:
        close_executors(executors)
        raise
    finally:
        if link is not None:
            link.started()
    return executors


def _handoff_pair(program: Any, placement: dict[str, PlacementSpec]) -> tuple[str, str] | None:
    """The program's state hand-off (sender, receiver: program.state_handoff) when both sides run remote on one
    executor kind, so the states can skip the driver."""
    pair = program.state_handoff()
    if pair is None:
        return None
    kinds = {placement[pair[0]].executor, placement[pair[1]].executor}
    return pair if len(kinds) == 1 and kinds <= {"process", "ray"} else None


def close_executors(executors: dict[str, Executor]) -> None:
    for executor in executors.values():
        executor.close()
    if any(e.kind == "ray" for e in executors.values()):
        from .ray import shutdown_ray

        shutdown_ray()


def _make(name: str, component: Any, program: Any, spec: PlacementSpec, placement: dict[str, PlacementSpec],
          ray_address: str | None, handoff: str | None, link: Any, sender: Any) -> Executor:
    if spec.executor == "inline":
        return InlineExecutor(component)
    if spec.executor == "thread":
        from .thread import ThreadExecutor

        return ThreadExecutor(name, component)
    worker = WorkerSpec(program.card, dict(program.settings), name, spec.device, spec.num_threads, handoff)
    if spec.executor == "process":
        from .process import ProcessExecutor

        if spec.workers == 1:
            return ProcessExecutor(name, worker, link if handoff else None, sender)
        from .workers import WorkersExecutor

        started: list[ProcessExecutor] = []
        try:
            for _ in range(spec.workers):  # spawned side by side, then each waited for
                started.append(ProcessExecutor(name, worker, wait=False))
            for executor in started:
                executor.wait_started()
        except BaseException:
            for executor in started:
                executor.close()
            raise
        return WorkersExecutor(name, started)
    from .ray import RayExecutor, actor_resources, ensure_ray

    cpus = sum(actor_resources(p)["num_cpus"] for p in placement.values() if p.executor == "ray")
    return RayExecutor(name, worker, spec, ensure_ray(ray_address, cpus), sender)


def _check_workers(program: Any, placement: dict[str, PlacementSpec], pair: tuple[str, str] | None) -> None:
    """The two sides of a direct hand-off pair one worker with one: neither has more."""
    if pair is None:
        return
    card, issues = program.card, []
    for name in pair:
        if placement[name].workers > 1:
            other = pair[1] if name == pair[0] else pair[0]
            message = (f"{name} and {other} hand off directly between their workers, one to one: "
                       f"place {other} inline to give {name} several")
            if card.placement.get(name) == placement[name]:  # the card's own
                key = f"placement.{name}.workers"
                issues.append(SpecIssue(card.source, card.line(key), key, message))
            else:
                issues.append(SpecIssue("<command line>", None, "--placement", message))
    if issues:
        raise SpecError(issues)


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


