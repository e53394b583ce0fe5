"""A card's weights count against its memory budget, checked from its params before any weight is drawn.

Every number of a card can be in range while their product is not (1,024 wide, 16 layers, 262,144
positions with one head): such a card would pass validation, then take gigabytes and a minute to draw.
A backend that draws its weights from the card says how many bytes they will take
(`weight_bytes(card, params)` in its params module, no array made); they must fit the card's
`limits.memory_budget_mib`, which also bounds what its requests reserve. A backend whose weights
come from a checkpoint (hf) says nothing here: their size is the checkpoint's.
"""

from __future__ import annotations

from typing import Any

from ..spec import CardSpec, SpecError, SpecIssue
from .backends import weight_bytes


def check_weight_budget(card: CardSpec, params: dict[str, Any]) -> None:
    backend = next(iter(card.components.values())).backend
    needed = weight_bytes(backend, card, params)
    budget = card.limits.memory_budget_mib << 20
    if needed is not None and needed > budget:
        key = "limits.memory_budget_mib"
        raise SpecError([SpecIssue(card.source, card.line(key) or card.line("components"), key,
                                   f"the components' weights take {_mib(needed)} MiB, over the card's memory budget "
                                   f"of {card.limits.memory_budget_mib} MiB (make them smaller, or declare the budget)")])


def _mib(n: int) -> str:
    return f"{n / (1 << 20):,.0f}"
