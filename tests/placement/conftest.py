"""Each placement's executors, started once per kind (Ray: the real local cluster of tests/conftest.py)."""

from __future__ import annotations

import pytest

from omni_cli.bench.placement import placed
from omni_cli.engine.executors import close_executors, make_executors


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
