"""The graph gruut builds of each text, without importing networkx's whole library of algorithms.

gruut keeps a text as a networkx `DiGraph` and walks it with `dfs_preorder_nodes`; that is all it uses of
networkx (gruut's own `GraphType` lists the graph's part: add_node, add_edge, nodes, out_degree, successors,
predecessors, out_edges, add_edges_from, remove_edges_from). Importing networkx imports every algorithm it
has, the largest part of gruut's import. While gruut is imported, `networkx` is a small module with `TextGraph`
(the same dict-of-dicts, so nodes and neighbours come in the same order) and the same preorder walk; any
other name gruut may read comes from the real networkx. Once gruut is imported the name is given back, so
whatever else imports networkx gets the real one.
"""

from __future__ import annotations

import importlib
import sys
import types
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


class TextGraph:
    """A directed graph as networkx's `DiGraph` keeps one: successors and predecessors in insertion order."""

    def __init__(self) -> None:
        self.nodes: dict[Any, dict] = {}  # node -> its attributes (`graph.nodes[n]["data"]`)
        self._succ: dict[Any, dict] = {}
        self._pred: dict[Any, dict] = {}

    def __len__(self) -> int:
        return len(self.nodes)

    def __contains__(self, node: Any) -> bool:
        return node in self.nodes

    def add_node(self, node: Any, **data: Any) -> None:
        if node not in self.nodes:
            self._succ[node], self._pred[node], self.nodes[node] = {}, {}, {}
        self.nodes[node].update(data)

    def add_edge(self, source: Any, target: Any) -> None:
        for node in (source, target):
            if node not in self.nodes:
                self.add_node(node)
        self._succ[source][target] = self._pred[target][source] = None  # an edge already there keeps its place

    def add_edges_from(self, edges) -> None:
        for edge in edges:
            self.add_edge(*edge[:2])

    def remove_edges_from(self, edges) -> None:
        for edge in edges:
            source, target = edge[:2]
            if target in self._succ.get(source, ()):
                del self._succ[source][target]
                del self._pred[target][source]

    def out_degree(self, node: Any) -> int:
        return len(self._succ[node])

    def out_edges(self, node: Any) -> list[tuple[Any, Any]]:
        return [(node, target) for target in self._succ[node]]

    def successors(self, node: Any) -> Iterator[Any]:
        return iter(self._succ[node])

    def predecessors(self, node: Any) -> Iterator[Any]:
        return iter(self._pred[node])


def dfs_preorder_nodes(graph: TextGraph, source: Any) -> Iterator[Any]:
    """Nodes reachable from `source` in depth-first preorder, each node's successors in order (as networkx's:
    a node's successors are read when the walk reaches it, after the caller has seen the node)."""
    yield source
    seen = {source}
    stack = [graph.successors(source)]
    while stack:
        for child in stack[-1]:
            if child not in seen:
                yield child
                seen.add(child)
                stack.append(graph.successors(child))
                break
        else:
            stack.pop()


class _SmallNetworkx(types.ModuleType):
    """`networkx` as gruut's modules hold it: the two names they use; any other from the real networkx."""

    DiGraph = TextGraph
    dfs_preorder_nodes = staticmethod(dfs_preorder_nodes)

    def __getattr__(self, attr: str):
        if sys.modules.get("networkx") is self:
            del sys.modules["networkx"]
        return getattr(importlib.import_module("networkx"), attr)


@contextmanager
def gruut_on_text_graphs():
    """Import gruut inside this block for it to build `TextGraph`s (nothing changes once gruut or networkx is
    already imported: gruut keeps what it has)."""
    if "gruut" in sys.modules or "networkx" in sys.modules:
        yield
        return
    small = _SmallNetworkx("networkx")
    sys.modules["networkx"] = small
    try:
        yield
    finally:
        if sys.modules.get("networkx") is small:
            del sys.modules["networkx"]
