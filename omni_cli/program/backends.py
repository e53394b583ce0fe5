"""The backends a card may name, imported only when a card uses them (hf pulls in torch)."""

from __future__ import annotations

import importlib
from types import ModuleType

# names a card may use -> modules inside this package (a card never names an import path)
_MODULES = {"numpy": "omni_cli.backends.toy", "hf": "omni_cli.backends.hf", "piper": "omni_cli.backends.piper"}
_PARAMS = {"numpy": "omni_cli.backends.toy.params", "hf": "omni_cli.backends.hf.params",
           "piper": "omni_cli.backends.piper.params"}


def backend_module(name: str) -> ModuleType:
    return importlib.import_module(_MODULES[name])


def params_schema(backend: str, role: str) -> type:
    """The dataclass a component's `params` must match (importing no heavy dependency)."""
    return importlib.import_module(_PARAMS[backend]).PARAMS[role]


def settings_schema(backend: str) -> type:
    """The dataclass the card's top-level `params` (and command-line overrides) must match."""
    return importlib.import_module(_PARAMS[backend]).SETTINGS


def weight_bytes(backend: str, card, params: dict) -> int | None:
    """Bytes of weights the backend will draw for these params, or None when they come from a checkpoint."""
    estimate = importlib.import_module(_PARAMS[backend]).weight_bytes  # None: the weights are a checkpoint's
    return None if estimate is None else estimate(card, params)
