"""Each placement's executors, started once per kind (Ray: the real local cluster of tests/conftest.py)."""

from __future__ import annotations

import pytest

from omni_cli.bench.placement import placed
from omni_cli.engine.executors import close_executors, make_executors


@pytest.fixture(scope="module")
def executors(request, toy):
    """`get(kind, program)`: the program's (the toy card's default one unless given) components placed on
    `kind`, made on first use and closed at the module's end (a process starts in ~1 s)."""
    made: dict[tuple[str, int], dict] = {}
    programs = []  # kept alive: their ids key `made`

    def get(kind: str, program=None):
        program = toy if program is None else program
        key = (kind, id(program))
        if key not in made:
            if "ray" in kind:
                request.getfixturevalue("ray_cluster")
            programs.append(program)
            made[key] = make_executors(program, placed(program, kind))
        return made[key]

    yield get
    for group in made.values():
        close_executors(group)
