"""Shared fixtures: the toy program compiled once, and helpers that run requests alone or together."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # the tests run from a checkout, installed or not
    sys.path.insert(0, str(ROOT))

from omni_cli.api import load  # noqa: E402

# The runtime's tests run the toy card: the command line's default is the Piper voice (tests/piper/)
os.environ.setdefault("OMNI_CARD", "qwen2_5_omni_toy")


@pytest.fixture(scope="session")
def toy():
    """The default card and program, compiled once (components hold no per-request state)."""
    return load("qwen2_5_omni_toy")


@pytest.fixture(scope="session")
def ray_cluster():
    """Ray for real (the `ray` extra), not a mock: one local cluster for every test that asks for it
    (tests/placement, tests/hf/test_hf_placement.py), started on first use."""
    import logging

    import ray

    # logical CPUs: two sets of three 1-CPU actors must fit on a 2-core CI machine (they mostly wait)
    ray.init(num_cpus=8, include_dashboard=False, log_to_driver=False, logging_level=logging.ERROR)
    yield ray
    ray.shutdown()
