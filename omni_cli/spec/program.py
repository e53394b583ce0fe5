"""A program: the task graph of one request — nodes that run ops or loops, wired by named slots."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from .card import NAME
from .errors import IssueList
from .schema import load_dataclass
from .yaml_source import Located

HandoffMode = Literal["barrier", "stream"]


@dataclass
class NodeSpec:
    id: str
    op: str | None = None  # a name in the package's op registry, never an import path
    loop: str | None = None  # a loop of the card
    inputs: list[str] = field(default_factory=list)
    output: str | None = None
    mode: HandoffMode | None = None  # hand-off ops only


@dataclass
class ProgramSpec:
    program: str
    description: str
    nodes: list[NodeSpec]
    inputs: list[str] = field(default_factory=lambda: ["text"])  # slots the request fills
    requires: list[str] = field(default_factory=list)  # card capabilities
    source: str = field(default="<memory>", init=False)  # the file it came from
    located: Located | None = field(default=None, init=False, repr=False)  # for file:line in later checks

    def line(self, key: str) -> int | None:
        return self.located.line(key) if self.located else None


def load_program(src: Located) -> ProgramSpec:
    """Validate a parsed program's structure: ids, slots, single producers, no cycles."""
    prog = load_dataclass(ProgramSpec, src)
    prog.source = src.file
    prog.located = src
    issues = IssueList(src.file)
    producers: dict[str, str] = {slot: "<request>" for slot in prog.inputs}
    ids: set[str] = set()
    for i, node in enumerate(prog.nodes):
        key = f"nodes.{i}"
        for what, name in [("id", node.id), ("output", node.output or "_"), *(
                (f"inputs.{j}", slot) for j, slot in enumerate(node.inputs))]:
            if not NAME.fullmatch(name):  # ids and slots are shown on terminals: plain words
                issues.add(src.line(f"{key}.{what}"), f"{key}.{what}", f"a name is letters, digits, _ . - "
                           f"(at most 64), not {name!r}")
        if node.id in ids:
            issues.add(src.line(f"{key}.id"), f"{key}.id", f"duplicate node id {node.id!r}")
        ids.add(node.id)
        if (node.op is None) == (node.loop is None):
            issues.add(src.line(key), key, "a node has exactly one of `op` or `loop`")
        if node.output is not None:
            if node.output in producers:
                issues.add(src.line(f"{key}.output"), f"{key}.output",
                           f"slot {node.output!r} is already produced by {producers[node.output]!r}")
            else:
                producers[node.output] = node.id
    for i, node in enumerate(prog.nodes):
        for j, slot in enumerate(node.inputs):
            if slot not in producers:
                issues.add(src.line(f"nodes.{i}.inputs.{j}"), f"nodes.{i}.inputs.{j}", f"no node produces slot {slot!r}")
    issues.raise_if_any()
    _check_acyclic(prog, producers, src, issues)
    issues.raise_if_any()
    return prog


def _check_acyclic(prog: ProgramSpec, producers: dict[str, str], src: Located, issues: IssueList) -> None:
    deps = {n.id: {producers[s] for s in n.inputs if producers[s] != "<request>"} for n in prog.nodes}
    state: dict[str, int] = {}  # 1 = on the current path, 2 = done

    def visit(node_id: str, path: list[str]) -> bool:
        if state.get(node_id) == 2:
            return False
        if state.get(node_id) == 1:
            cycle = path[path.index(node_id):] + [node_id]
            i = next(k for k, n in enumerate(prog.nodes) if n.id == node_id)
            issues.add(src.line(f"nodes.{i}"), f"nodes.{i}", f"cycle: {' -> '.join(cycle)}")
            return True
        state[node_id] = 1
        found = any(visit(d, path + [node_id]) for d in sorted(deps[node_id]))
        state[node_id] = 2
        return found

    for n in prog.nodes:
        if visit(n.id, []):
            return


def topological_order(prog: ProgramSpec) -> list[NodeSpec]:
    """Nodes so that every node comes after the producers of its inputs (stable for ties)."""
    producers = {n.output: n.id for n in prog.nodes if n.output}
    done: set[str] = set()
    order: list[NodeSpec] = []
    pending = list(prog.nodes)
    while pending:
        for node in pending:
            if all(s in prog.inputs or producers.get(s) in done for s in node.inputs):
                order.append(node)
                done.add(node.id)
                pending.remove(node)
                break
        else:  # load_program rejects cycles, so this cannot happen for a loaded program
            raise ValueError("program graph has a cycle")
    return order
