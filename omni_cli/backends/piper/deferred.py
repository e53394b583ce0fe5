"""Modules the text front end imports at start-up but needs only for some texts, loaded on first use instead.

gruut imports dateparser when it is imported, and dateparser compiles its timezone tables then (the largest
part of gruut's import); gruut calls it only for a word that may be a date in a form it cannot read itself
("4/5/2023"). A stand-in module takes its place in `sys.modules` until an attribute of it is first read;
then the real module is imported and answers from then on.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types

DEFERRED = ("dateparser",)


class OnFirstUse(types.ModuleType):
    """Stands in for a module not imported yet; the first attribute read imports it."""

    def __getattr__(self, attr: str):
        name = self.__name__
        if sys.modules.get(name) is self:
            del sys.modules[name]
        try:
            real = importlib.import_module(name)
        except BaseException:
            sys.modules.setdefault(name, self)
            raise
        return getattr(real, attr)


def defer(names: tuple[str, ...] = DEFERRED) -> None:
    """Put a stand-in for each module not imported yet (call before importing what imports them)."""
    for name in names:
        if name not in sys.modules and importlib.util.find_spec(name) is not None:
            sys.modules[name] = OnFirstUse(name)
