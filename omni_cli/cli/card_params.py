"""`omni cards show --params`: every key a card may set, its value in this card, what it accepts, what it does.

The rows come from the schemas themselves (`bounded(..., doc=...)` and the field types), so what is
listed is what validation checks.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..spec.card import BatchingSpec, CardSpec, LimitsSpec, LoopSpec, SamplingSpec
from ..spec.placement import PlacementSpec
from ..spec.schema import FieldDoc, field_docs

_LOOP_KEYS_SHOWN_ELSEWHERE = {"kind", "component", "prompt_slot", "work_unit", "sampling", "residual_sampling"}
_LOOP_KINDS_WITH_SAMPLING = {"ar_decode"}


def param_rows(card: CardSpec) -> list[tuple[str, str, str, str]]:
    """(key, value in this card, what it accepts, what it does) for every settable key, in card order."""
    from ..program.backends import params_schema, settings_schema

    rows: list[tuple[str, str, str, str]] = []

    def add(prefix: str, docs: list[FieldDoc], given: Any) -> None:
        for d in docs:
            if isinstance(given, dict):
                value = given.get(d.name, d.default)
            else:
                value = getattr(given, d.name)
            rows.append((f"{prefix}{d.name}", _shown(value), d.accepts, d.doc))

    add("", [d for d in field_docs(CardSpec) if d.name in ("seed", "sample_rate")], card)
    backends = sorted({c.backend for c in card.components.values()})
    if len(backends) == 1:
        add("params.", field_docs(settings_schema(backends[0])), card.params)
    for name, comp in card.components.items():
        add(f"components.{name}.params.", field_docs(params_schema(comp.backend, comp.role)), comp.params)
    for name, loop in card.loops.items():
        add(f"loops.{name}.", [d for d in field_docs(LoopSpec) if _applies(d, loop.kind)], loop)
        if loop.kind in _LOOP_KINDS_WITH_SAMPLING:
            add(f"loops.{name}.sampling.", field_docs(SamplingSpec), loop.sampling)
            if card.located and f"loops.{name}.residual_sampling" in card.located.lines:  # a frame talker (Qwen3)
                add(f"loops.{name}.residual_sampling.", field_docs(SamplingSpec), loop.residual_sampling)
    add("limits.", field_docs(LimitsSpec), card.limits)
    add("batching.", field_docs(BatchingSpec), card.batching)
    for name in card.components:
        add(f"placement.{name}.", field_docs(PlacementSpec), card.placement.get(name, PlacementSpec()))
    return rows


def _applies(d: FieldDoc, kind: str) -> bool:
    """A loop key is shown for the kinds its doc names first ("ar_decode: ..."), or for every kind."""
    if d.name in _LOOP_KEYS_SHOWN_ELSEWHERE:
        return False
    named, sep, _ = d.doc.partition(": ")
    return not sep or " " in named or named == kind


def as_param_block(row: tuple[str, ...]) -> list[str]:
    """A row on a terminal too narrow for the table: `key = value`, then what it accepts and does."""
    key, value, accepts, doc = row
    return [f"{key} = {value}", f"accepts {accepts}", *([doc] if doc else [])]


def _shown(value: Any) -> str:
    if value is dataclasses.MISSING:
        return "(required)"
    if value is None:
        return "-"
    text = str(value).replace("\n", " ")
    return text if len(text) <= 40 else text[:39] + "…"
