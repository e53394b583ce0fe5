"""The checks of a card and a program that need the package's registries (loop kinds, ops, backends), no weights.

Each check adds what it finds to an IssueList and goes on, so `omni cards validate` reports every independent
issue in one pass (a wrong type must not hide an unknown key or a mis-wired loop). A key the schema left out
for its own issue, or found wired wrong (`card.was_dropped(key)`), is not judged again: one mistake, one error.
"""

from __future__ import annotations

from typing import Any

from ..loops import LOOP_KINDS
from ..spec import CardSpec, NodeSpec, ProgramSpec, SpecError, load_dataclass, topological_order
from ..spec.errors import IssueList
from .backends import params_schema, settings_schema
from .graph_rules import check_emitters, describe, kinds_match, with_role
from .ops import OPS, SLOT_KINDS
from .weight_budget import check_weight_budget

REQUEST_SLOTS = {"text": "text", "audio": "audio", "images": "images"}  # the program inputs a SpeakRequest fills, and their kinds (see CompiledProgram.wire)


def check_program(card: CardSpec, program: ProgramSpec) -> dict[str, Any]:
    """Every check that needs no weights: the card's loops and params, the program against the card.

    Returns each component's validated params; raises SpecError with every issue. `omni cards validate` stops here.
    """
    card_issues, program_issues = IssueList(card.source), IssueList(program.source)
    params = check_card_parts(card, card_issues)
    check_against_card(program, card, program_issues, structure_valid=True)  # load_program checked it
    issues = card_issues.issues + program_issues.issues
    if issues:
        raise SpecError(issues)
    return params


def check_card_parts(card: CardSpec, issues: IssueList) -> dict[str, Any]:
    """Loop kinds, each component's params, then (when the whole card is valid so far) the weights against the
    budget — the backend's estimate reads every role's params."""
    check_loop_kinds(card, issues)
    params = component_params(card, issues)
    if not issues.issues and card.components and not card.dropped:
        try:
            check_weight_budget(card, params)  # before build_components draws a single weight
        except SpecError as exc:
            issues.extend(exc.issues)
    return params


def check_loop_kinds(card: CardSpec, issues: IssueList) -> None:
    """Each loop's kind is registered, runs the work unit the card says and drives a role it can."""
    for name, loop in card.loops.items():
        key = f"loops.{name}"
        kind = LOOP_KINDS.get(loop.kind)
        if kind is None:
            known = " | ".join(repr(k) for k in LOOP_KINDS)
            issues.add(card.line(f"{key}.kind"), f"{key}.kind", f"expected one of {known}, got {loop.kind!r}")
            continue
        if loop.work_unit is not None and loop.work_unit != kind.work_unit:
            issues.add(card.line(f"{key}.work_unit"), f"{key}.work_unit",
                       f"a {loop.kind} loop runs {kind.work_unit!r} units, got {loop.work_unit!r} (or omit work_unit)")
        component = card.components.get(loop.component)  # an undeclared one is the card's own issue
        if component is not None and component.role not in kind.roles:
            issues.add(card.line(f"{key}.component"), f"{key}.component", f"a {loop.kind} loop cannot drive a {component.role}")


def component_params(card: CardSpec, issues: IssueList | None = None) -> dict[str, Any]:
    """Each component's `params` checked against its backend's schema (all issues at once: raised, or added
    to `issues`). A component whose params are wrong has no entry in the result."""
    found = IssueList(card.source) if issues is None else issues
    out: dict[str, Any] = {}
    backends = {c.backend for c in card.components.values()}
    if len(backends) > 1:
        found.add(card.line("components"), "components", "all components must share one backend")
    elif backends:
        try:  # the backend settings the card gives (model_path, dtype, …): the command line may add to them
            load_dataclass(settings_schema(backends.pop()), card.located, key="params", value=card.params)
        except SpecError as exc:
            found.extend(exc.issues)
        for name, comp in card.components.items():
            key = f"components.{name}.params"
            try:
                out[name] = load_dataclass(params_schema(comp.backend, comp.role), card.located, key=key, value=comp.params)
            except SpecError as exc:
                found.extend(exc.issues)
                continue
            # rules between fields (e.g. heads dividing the width), declared by the schema itself
            for field_name, message in out[name].problems():
                found.add(card.line(f"{key}.{field_name}"), f"{key}.{field_name}", message)
    if issues is None:
        found.raise_if_any()
    return out


def check_against_card(program: ProgramSpec, card: CardSpec, issues: IssueList, *, structure_valid: bool) -> None:
    """The program's nodes against the ops and the card's loops; then, when everything it stands on is valid
    (`structure_valid`: the program's own ids, slots and producers), the kinds of value each slot holds."""
    missing = [c for c in program.requires if c not in card.capabilities]
    if missing and not card.was_dropped("capabilities"):
        issues.add(program.line("requires"), "requires", f"card {card.model!r} lacks capability {', '.join(missing)}")
    for j, slot in enumerate(program.inputs):
        if slot not in REQUEST_SLOTS and not program.was_dropped("inputs"):  # wire() would fail on every request
            issues.add(program.line(f"inputs.{j}"), f"inputs.{j}",
                       f"a request fills only {', '.join(sorted(REQUEST_SLOTS))}, not {slot!r}")
    before = len(issues.issues)
    used_loops: set[str] = set()
    for node in program.nodes:
        if node.op is not None:
            _check_op_node(node, program, issues)
        elif node.loop is not None:
            _check_loop_node(node, program, card, used_loops, issues)
    check_emitters(program, issues)
    run = [card.loops.get(node.loop) for node in program.nodes if node.loop is not None]
    loops_valid = not card.was_dropped("loops") and all(
        loop is not None and loop.kind in LOOP_KINDS and loop.component in card.components
        and card.components[loop.component].role in LOOP_KINDS[loop.kind].roles for loop in run)
    if structure_valid and loops_valid and len(issues.issues) == before and not program.dropped:
        _check_slot_kinds(program, card, issues)


def _check_op_node(node: NodeSpec, program: ProgramSpec, issues: IssueList) -> None:
    key = f"nodes.{node.index}"
    op = OPS.get(node.op)
    if op is None:
        issues.add(program.line(f"{key}.op"), f"{key}.op", f"unknown op {node.op!r} (known: {', '.join(sorted(OPS))})")
        return
    if not op.takes_inputs(len(node.inputs)):
        issues.add(program.line(f"{key}.inputs"), f"{key}.inputs", f"op {op.name!r} takes {op.describe_inputs()} input(s)")
    if op.produces != (node.output is not None):
        what = "needs an `output` slot" if op.produces else "produces nothing (remove `output`)"
        issues.add(program.line(key), key, f"op {op.name!r} {what}")
    if node.mode is not None and not op.is_handoff:
        issues.add(program.line(f"{key}.mode"), f"{key}.mode", f"op {op.name!r} is not a hand-off; `mode` is for hand-offs")


def _check_loop_node(node: NodeSpec, program: ProgramSpec, card: CardSpec, used: set[str], issues: IssueList) -> None:
    key = f"nodes.{node.index}"
    if card.was_dropped(f"loops.{node.loop}"):  # left out or wired wrong: the card's own issue says why
        return
    spec = card.loops.get(node.loop)
    if spec is None:
        issues.add(program.line(f"{key}.loop"), f"{key}.loop",
                   f"card {card.model!r} has no loop {node.loop!r} (loops: {', '.join(card.loops)})")
        return
    if node.loop in used:
        issues.add(program.line(f"{key}.loop"), f"{key}.loop", f"loop {node.loop!r} is already run by another node")
    used.add(node.loop)
    if node.inputs != [spec.prompt_slot]:
        issues.add(program.line(f"{key}.inputs"), f"{key}.inputs",
                   f"loop {node.loop!r} reads its prompt slot {spec.prompt_slot!r}; inputs must be [{spec.prompt_slot}]")
    if node.output is None:
        issues.add(program.line(key), key, "a loop node needs an `output` slot")
    if node.mode is not None:
        issues.add(program.line(f"{key}.mode"), f"{key}.mode", "`mode` is for hand-off ops")


def _check_slot_kinds(program: ProgramSpec, card: CardSpec, issues: IssueList) -> None:
    """Every input slot holds the kind of value its reader takes (the graph is otherwise valid here)."""
    kinds = {slot: REQUEST_SLOTS.get(slot, "text") for slot in program.inputs}
    for node in topological_order(program):
        if node.op is not None:
            reads, makes, who = OPS[node.op].reads, OPS[node.op].makes, f"op {node.op!r}"
        else:
            kind, role = LOOP_KINDS[card.loops[node.loop].kind], card.components[card.loops[node.loop].component].role
            reads, makes, who = (with_role(kind.reads, role),), with_role(kind.makes, role), f"loop {node.loop!r}"
        for j, (slot, wanted) in enumerate(zip(node.inputs, reads[:len(node.inputs)], strict=True)):
            have = kinds.get(slot)
            if have is not None and not kinds_match(have, wanted):
                key = f"nodes.{node.index}.inputs.{j}"
                issues.add(program.line(key), key, f"slot {slot!r} holds {describe(have, SLOT_KINDS)}, but {who} "
                                                   f"reads {describe(wanted, SLOT_KINDS)}")
        if node.output is not None and makes is not None:
            kinds[node.output] = makes
