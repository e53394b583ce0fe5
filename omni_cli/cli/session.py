"""Build an engine from the model options: card, program, backend settings, policy."""

from __future__ import annotations

from dataclasses import dataclass, field
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


def open_engine(options: ModelOptions):
    """Compile the card and program and start an engine. Raises SpecError / CliError for bad input."""
    from ..engine import Engine
    from ..engine.executors import make_executors, placement_of
    from ..program import compile_program, load_card_file, load_program_file
    from ..spec.placement import check_ray_address, override_placement

    card = load_card_file(options.card)
    given = {k: v for k, v in options.settings.items() if v is not None}
    backends = sorted({c.backend for c in card.components.values()})
    if given and not SETTINGS_BACKENDS.intersection(backends):
        flags = ", ".join(BACKEND_SETTINGS[k] for k in given)
        raise CliError(f"{flags}: only for cards on the hf backend; card {card.model!r} runs on {', '.join(backends)}")
    program = load_program_file(options.program or card.defaults.program)
    compiled = compile_program(card, program, given)
    placement = placement_of(compiled, None if options.placement is None else
                             override_placement(card.placement, options.placement, list(compiled.components)))
    address = None if options.ray_address is None else check_ray_address(options.ray_address)
    return Engine(compiled, policy=options.policy, executors=make_executors(compiled, placement, ray_address=address))


def check_voice(engine, voice: str | None) -> None:
    """Fail before any output is opened, not at the first request."""
    from ..spec import SpecError

    try:
        engine.program.resolve_voice(voice)  # the same check every request meets in the engine
    except SpecError as exc:
        raise CliError(f"--voice: {exc.issues[0].message}") from None
