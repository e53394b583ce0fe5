"""The one builder: a card, its settings, a placement and replicas -> a ready engine (whose `close` ends it all).

`omni speak`, `omni trace`, `omni serve`, `omni bench`, `omni rollout` and the library's `load_voice` all
build here; nothing above the engine starts executors, worker processes, replicas or Ray actors itself.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

from .defaults import DEFAULT_CARD
from .engine import Engine
from .engine.executors import close_executors, make_executors, placement_of
from .program import CompiledProgram, compile_program, load_checked
from .spec.placement import PlacementSpec, check_ray_address, override_placement

SETTINGS_BACKENDS = frozenset({"hf"})  # backends that take settings (model_path, dtype, device)


class SettingsError(ValueError):
    """Settings given for a card whose backends take none (`keys`: the settings given)."""

    def __init__(self, keys: list[str], card: str, backends: list[str]):
        self.keys = keys
        super().__init__(f"{', '.join(keys)}: only for cards on the hf backend; card {card!r} runs on "
                         f"{', '.join(backends)}")


@dataclass(frozen=True)
class EngineOptions:
    """What an engine is built from: the model (card, program, settings, card overrides) and where it runs."""

    card: str = DEFAULT_CARD
    program: str | None = None  # None: the card's own
    policy: str = "latency-first"
    settings: Mapping[str, Any] = field(default_factory=dict)  # model_path, dtype, device; None = unset
    placement: str | None = None  # KIND or NAME=KIND,... over the card's placement; None: the card's
    ray_address: str | None = None  # join this Ray cluster (auto or HOST:PORT)
    replicas: int = 1  # whole engines (1: this process's own)
    overrides: Mapping[str, Any] = field(default_factory=dict)  # card values by dotted key
    max_batch: int | None = None  # None: the card's


def load_program(options: EngineOptions, on_load: Any = None) -> CompiledProgram:
    """Compile the card with its program and settings. Raises SpecError (every issue of both at once) or
    SettingsError. `on_load` (a load view) hears the backend's load phases."""
    card, program = load_checked(options.card, options.program, dict(options.overrides))
    given = {k: v for k, v in options.settings.items() if v is not None}
    backends = sorted({c.backend for c in card.components.values()})
    if given and not SETTINGS_BACKENDS.intersection(backends):
        raise SettingsError(list(given), card.model, backends)
    return compile_program(card, program, given, on_load)


def build_engine(options: EngineOptions, on_load: Any = None):
    """A ready engine for `options`: an `Engine`, or with `replicas > 1` a `ReplicaPool` of whole engines
    (same calls: submit, events, cancel_all, close). Its `close()` stops every worker, replica and actor."""
    program = load_program(options, on_load)
    placement = placement_for(program, options.placement)
    address = None if options.ray_address is None else check_ray_address(options.ray_address)
    if options.replicas > 1:
        return _replicas(program, options, placement, address)
    return _engine(program, make_executors(program, placement, ray_address=address), options.policy,
                   options.max_batch)


def engine_on(program: CompiledProgram, placement: str | None = None, *, policy: str = "latency-first",
              max_batch: int | None = None, direct_handoff: bool = True,
              wrap: Callable[[dict], dict] | None = None) -> Engine:
    """An engine on an already compiled program, its components placed by `placement` (None: the card's).
    `wrap(executors)`: the started executors, handed back as the engine should use them (a meter around each)."""
    executors = start_executors(program, placement, direct_handoff=direct_handoff)
    return _engine(program, executors, policy, max_batch, wrap)


def start_executors(program: CompiledProgram, placement: str | None = None, *, direct_handoff: bool = True) -> dict:
    """One started executor per component as `placement` places it (close them with `close_executors`)."""
    return make_executors(program, placement_for(program, placement), direct_handoff=direct_handoff)


def placement_for(program: CompiledProgram, placement: str | None) -> dict[str, PlacementSpec]:
    """Each component's placement: `placement` (KIND, or NAME=KIND,...) over the card's; None: the card's."""
    if placement is None:
        return placement_of(program)
    return placement_of(program, override_placement(program.card.placement, placement, list(program.components)))


def runs_inline(program: CompiledProgram, placement: str | None = None) -> bool:
    """Whether every component runs in the engine's own thread (no executor starts cold for a run)."""
    return all(spec.executor == "inline" for spec in placement_for(program, placement).values())


def _engine(program: CompiledProgram, executors: dict, policy: str, max_batch: int | None,
            wrap: Callable[[dict], dict] | None = None) -> Engine:
    """The engine on started executors; they are closed if it cannot be made (an unknown policy)."""
    try:
        return Engine(program, policy=policy, max_batch=max_batch, executors=wrap(executors) if wrap else executors)
    except BaseException:
        close_executors(executors)
        raise


def _replicas(program: CompiledProgram, options: EngineOptions, placement: dict[str, PlacementSpec],
              address: str | None):
    """N whole engines, each built from the same options where it runs. On Ray (a component placed on ray, or
    a Ray address) each replica is one actor running its components inline, holding the resources the card's
    ray placements ask for together; otherwise each is a local process whose engine places its components as
    the options say."""
    from .engine.executors.ray import actor_resources, ensure_ray
    from .engine.replicas import start_replicas

    on_ray = address is not None or any(p.executor == "ray" for p in placement.values())
    one = replace(options, replicas=1, ray_address=None, placement="inline" if on_ray else options.placement)
    make_engine = partial(build_engine, one)
    if not on_ray:
        return start_replicas(program, make_engine, options.replicas, policy=options.policy)
    wanted = [actor_resources(p) for p in placement.values() if p.executor == "ray"]
    resources = {"num_cpus": max(1.0, sum(r["num_cpus"] for r in wanted)),
                 "num_gpus": sum(r["num_gpus"] for r in wanted)}
    ray = ensure_ray(address, resources["num_cpus"] * options.replicas)
    return start_replicas(program, make_engine, options.replicas, policy=options.policy, ray=ray,
                          resources=resources)
