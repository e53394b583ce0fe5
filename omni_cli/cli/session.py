"""Build an engine from the model options: card, program, backend settings, policy."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from .errors import CliError

BACKEND_SETTINGS = {"model_path": "--model-path", "dtype": "--dtype", "device": "--device"}
SETTINGS_BACKENDS = {"hf"}  # backends that take the settings above


@dataclass
class ModelOptions:
    card: str
    program: str | None = None
    policy: str = "latency-first"
    settings: dict[str, Any] = field(default_factory=dict)  # model_path, dtype, device; None = unset
    placement: str | None = None  # --placement: KIND or NAME=KIND,… over the card's placement
    ray_address: str | None = None  # --ray-address
    replicas: int = 1  # --replicas: whole engines (1: this process's own)
    overrides: dict[str, Any] = field(default_factory=dict)  # --set: card values by dotted key


def open_engine(options: ModelOptions, on_load=None):
    """Compile the card and program and start an engine. Raises SpecError / CliError for bad input.

    `on_load` (a load_view.LoadView) hears the backend's load phases."""
    from ..engine import Engine
    from ..engine.executors import make_executors, placement_of
    from ..program import compile_program, load_checked
    from ..spec.placement import check_ray_address, override_placement

    # every issue of both, as `omni cards validate`
    card, program = load_checked(options.card, options.program, options.overrides)
    given = {k: v for k, v in options.settings.items() if v is not None}
    backends = sorted({c.backend for c in card.components.values()})
    if given and not SETTINGS_BACKENDS.intersection(backends):
        flags = ", ".join(BACKEND_SETTINGS[k] for k in given)
        raise CliError(f"{flags}: only for cards on the hf backend; card {card.model!r} runs on {', '.join(backends)}")
    compiled = compile_program(card, program, given, on_load)
    placement = placement_of(compiled, None if options.placement is None else
                             override_placement(card.placement, options.placement, list(compiled.components)))
    address = None if options.ray_address is None else check_ray_address(options.ray_address)
    if options.replicas > 1:
        return open_replicas(compiled, options, placement, address)
    return Engine(compiled, policy=options.policy, executors=make_executors(compiled, placement, ray_address=address))


def open_replicas(compiled, options: ModelOptions, placement: dict, address: str | None):
    """`--replicas N`: N whole engines, each built from the same options where it runs. On Ray (a component
    placed on ray, or --ray-address) each replica is one actor running its components inline, holding the
    resources the card's ray placements ask for together; otherwise each is a local process whose engine
    places its components as the card and --placement say."""
    from functools import partial

    from ..engine.executors.ray import actor_resources, ensure_ray
    from ..engine.replicas import start_replicas

    on_ray = address is not None or any(p.executor == "ray" for p in placement.values())
    one = replace(options, replicas=1, ray_address=None, placement="inline" if on_ray else options.placement)
    make_engine = partial(open_engine, one)
    if not on_ray:
        return start_replicas(compiled, make_engine, options.replicas, policy=options.policy)
    wanted = [actor_resources(p) for p in placement.values() if p.executor == "ray"]
    resources = {"num_cpus": max(1.0, sum(r["num_cpus"] for r in wanted)),
                 "num_gpus": sum(r["num_gpus"] for r in wanted)}
    ray = ensure_ray(address, resources["num_cpus"] * options.replicas)
    return start_replicas(compiled, make_engine, options.replicas, policy=options.policy, ray=ray, resources=resources)


def check_voice(engine, voice: str | None) -> None:
    """Fail before any output is opened, not at the first request."""
    from ..spec import SpecError

    try:
        engine.program.resolve_voice(voice)  # the same check every request meets in the engine
    except SpecError as exc:
        raise CliError(f"--voice: {exc.issues[0].message}") from None
