"""A program: the task graph of one request — nodes that run ops or loops, wired by named slots."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from .card import NAME
from .errors import IssueList, any_dropped
from .schema import check_dataclass
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
    index: int = field(default=0, init=False, repr=False, compare=False)  # its place in the file's `nodes`


@dataclass
class ProgramSpec:
    program: str
    description: str
    nodes: list[NodeSpec]
    inputs: list[str] = field(default_factory=lambda: ["text"])  # slots the request fills
    requires: list[str] = field(default_factory=list)  # card capabilities
    source: str = field(default="<memory>", init=False)  # the file it came from
    located: Located | None = field(default=None, init=False, repr=False)  # for file:line in later checks
    dropped: frozenset[str] = field(default=frozenset(), init=False, repr=False)  # keys left out for an issue

    def __post_init__(self) -> None:
        for i, node in enumerate(self.nodes):
            node.index = i

    def line(self, key: str) -> int | None:
        return self.located.line(key) if self.located else None

    def was_dropped(self, *keys: str) -> bool:
        """A key later checks must not judge: its value was left out for an issue already reported."""
        return any_dropped(self.dropped, keys)


def check_program_spec(src: Located) -> tuple[ProgramSpec | None, IssueList]:
    """Every issue of a parsed program's structure in one pass (ids, slots, single producers, no cycles), and as
    much of the program as is valid (None when it is not even a mapping)."""
    issues = IssueList(src.file)
    issues.extend(src.issues)
    prog = check_dataclass(ProgramSpec, src, issues)
    if prog is None:
        return None, issues
    prog.source = src.file
    prog.located = src
    prog.dropped = frozenset(issues.dropped)
    written = src.value.get("nodes")
    if isinstance(written, list):  # a node left out for its own issue keeps the next ones' places in the file
        kept = [i for i in range(len(written)) if f"nodes.{i}" not in issues.dropped]
        for node, i in zip(prog.nodes, kept, strict=True):
            node.index = i
    producers: dict[str, str] = {slot: "<request>" for slot in prog.inputs}
    ids: set[str] = set()
    for node in prog.nodes:
        key = f"nodes.{node.index}"
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
    # a node left out for its own issue may still produce a slot
    outputs = {n.get("output") for n in written if isinstance(n, dict) and isinstance(n.get("output"), str)} \
        if isinstance(written, list) else None
    for node in prog.nodes:
        for j, slot in enumerate(node.inputs):
            if slot not in producers and outputs is not None and slot not in outputs and not prog.was_dropped("inputs"):
                key = f"nodes.{node.index}.inputs.{j}"
                issues.add(src.line(key), key, f"no node produces slot {slot!r}")
    if len(ids) == len(prog.nodes):  # with two nodes of one id, a cycle could not be told from a repeat
        _check_acyclic(prog, producers, src, issues)
    return prog, issues


def load_program(src: Located) -> ProgramSpec:
    """A program whose structure is valid, or SpecError with every issue."""
    prog, issues = check_program_spec(src)
    issues.raise_if_any()
    return prog


def _check_acyclic(prog: ProgramSpec, producers: dict[str, str], src: Located, issues: IssueList) -> None:
    deps = {n.id: {producers[s] for s in n.inputs if producers.get(s, "<request>") != "<request>"} for n in prog.nodes}
    state: dict[str, int] = {}  # 1 = on the current path, 2 = done

    def visit(node_id: str, path: list[str]) -> bool:
        if state.get(node_id) == 2:
            return False
        if state.get(node_id) == 1:
            cycle = path[path.index(node_id):] + [node_id]
            node = next(n for n in prog.nodes if n.id == node_id)
            issues.add(src.line(f"nodes.{node.index}"), f"nodes.{node.index}", f"cycle: {' -> '.join(cycle)}")
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
