"""A real local Ray, started once per test run, and each placement's executors, started once per kind."""

from __future__ import annotations

import logging

import pytest

from omni_cli.engine.executors import close_executors, make_executors, placement_of
from omni_cli.spec.placement import PlacementSpec, override_placement

KINDS = ["thread", "process", "ray"]


@pytest.fixture(scope="session")
def ray_cluster():
    """Ray for real (the `ray` extra), not a mock: one local cluster for every test that asks for it."""
    import ray

    # logical CPUs: two sets of three 1-CPU actors must fit on a 2-core CI machine (they mostly wait)
    ray.init(num_cpus=8, include_dashboard=False, log_to_driver=False, logging_level=logging.ERROR)
    yield ray
    ray.shutdown()


def placed(program, kind: str) -> dict[str, PlacementSpec]:
    return placement_of(program, override_placement(program.card.placement, kind, list(program.components)))


@pytest.fixture(scope="module")
def executors(request, toy):
    """{kind: executors} made on first use and closed at the module's end (a process starts in ~1 s)."""
    made: dict[str, dict] = {}

    def get(kind: str):
        if kind not in made:
            if kind == "ray":
                request.getfixturevalue("ray_cluster")
            made[kind] = make_executors(toy, placed(toy, kind))
        return made[kind]

    yield get
    for group in made.values():
        close_executors(group)
