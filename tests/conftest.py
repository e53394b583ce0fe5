"""Shared fixtures: the toy program compiled once, and helpers that run requests alone or together."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # the tests run from a checkout, installed or not
    sys.path.insert(0, str(ROOT))

from omni_cli.api import load  # noqa: E402
from omni_cli.engine import Engine  # noqa: E402


@pytest.fixture(scope="session")
def toy():
    """The default card and program, compiled once (components hold no per-request state)."""
    return load()


def run_alone(program, request, **engine_options):
    engine = Engine(program, **engine_options)
    return engine.submit(request, collect=True).result()


def run_together(program, requests, **engine_options):
    engine = Engine(program, **engine_options)
    handles = [engine.submit(r, collect=True) for r in requests]
    for _ in engine.events():
        pass
    return engine, [h.result() for h in handles]
