"""The one registry of loop kinds: a card's `kind:` names a class registered here, nothing else.

A new loop kind (say, one WorkUnit per sentence for a non-autoregressive stage) is a `Loop` subclass
that declares its kind, work unit, the roles it may drive and the slot kinds it reads and makes, and
is decorated with `@register_loop_kind`; the card check, the program's slot check and the compiler
all read it from here.
"""

from __future__ import annotations

from .base import Loop

LOOP_KINDS: dict[str, type[Loop]] = {}


def register_loop_kind(cls: type[Loop]) -> type[Loop]:
    for attr in ("kind", "work_unit", "roles", "reads", "makes", "output"):
        if not hasattr(cls, attr):  # a registration error is the developer's, found at import
            raise TypeError(f"loop kind {cls.__name__} must declare {attr!r}")
    if cls.kind in LOOP_KINDS and LOOP_KINDS[cls.kind] is not cls:
        raise ValueError(f"loop kind {cls.kind!r} is already registered by {LOOP_KINDS[cls.kind].__name__}")
    LOOP_KINDS[cls.kind] = cls
    return cls
