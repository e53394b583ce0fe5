"""A request's footprint, computed once at wiring: each loop sized from the bound of the loop it reads."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..loops import NO_BOUND, Footprint, Loop, LoopState, OutputBound
from ..spec import NodeSpec


@dataclass(frozen=True)
class RequestFootprint:
    """What admission reserves for a request: every loop's resident bytes, held from admission to the end,
    and headroom for the largest single step any of its loops takes."""

    by_loop: dict[str, Footprint]

    @property
    def resident_bytes(self) -> int:
        return sum(f.resident_bytes for f in self.by_loop.values())

    @property
    def peak_step_bytes(self) -> int:
        return max((f.peak_step_bytes for f in self.by_loop.values()), default=0)


def upstream_loops(order: Sequence[NodeSpec]) -> dict[str, str | None]:
    """For each loop node, the loop whose output reaches its prompt slot through op nodes (None: the request's
    text). `order` is topological, so every slot's producer comes before its readers."""
    source: dict[str, str | None] = {}  # slot -> the loop its value derives from
    upstream: dict[str, str | None] = {}
    for node in order:
        came_from = next((source[s] for s in node.inputs if source.get(s) is not None), None)
        if node.loop is not None:
            upstream[node.loop] = came_from
            came_from = node.loop
        if node.output is not None:
            source[node.output] = came_from
    return upstream


def size_request(states: Sequence[tuple[Loop, LoopState]], upstream: dict[str, str | None]) -> RequestFootprint:
    """Each loop's footprint from the bound its upstream loop promises (states in cascade order)."""
    bounds: dict[str, OutputBound] = {}
    by_loop: dict[str, Footprint] = {}
    for loop, state in states:
        source = upstream.get(loop.loop_id)
        by_loop[loop.loop_id], bounds[loop.loop_id] = loop.footprint(state, NO_BOUND if source is None else bounds[source])
    return RequestFootprint(by_loop)
