"""The library's front door: load a card and a program, make an engine, submit requests."""

from __future__ import annotations

from typing import Any

from .defaults import DEFAULT_CARD
from .engine import Engine
from .program import CompiledProgram, compile_program, load_checked


def load(card: str = DEFAULT_CARD, program: str | None = None, settings: dict[str, Any] | None = None,
         overrides: dict[str, Any] | None = None) -> CompiledProgram:
    """Compile a card (name or path) with a program (name or path; default: the card's). `overrides`: card
    values by dotted key, as `--set` gives them (`{"components.vocoder.params.dit_compile": True}`)."""
    card_spec, program_spec = load_checked(card, program, overrides)
    return compile_program(card_spec, program_spec, settings)


def engine(card: str = DEFAULT_CARD, program: str | None = None, settings: dict[str, Any] | None = None,
           **engine_options: Any) -> Engine:
    """`Engine(load(card, program, settings), **engine_options)`."""
    return Engine(load(card, program, settings), **engine_options)
