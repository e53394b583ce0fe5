"""Compile a card and a program into loop instances and a node graph, and wire requests through it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..loops import LOOP_KINDS, Loop, LoopRequest, LoopState
from ..loops.recorder import attach_recorders
from ..spec import (
    CardSpec,
    Located,
    NodeSpec,
    ProgramSpec,
    SpeakRequest,
    SpecError,
    SpecIssue,
    load_dataclass,
    topological_order,
)
from ..spec.errors import IssueList
from ..spec.stream import StreamEvent
from .backends import backend_module, params_schema, settings_schema
from .graph_rules import check_emitters, describe, kinds_match, with_role
from .ops import OPS, SLOT_KINDS, RequestContext
from .weight_budget import check_weight_budget

SPEED_RANGE = (0.25, 4.0)  # a request's speed: sentence voices stretch every duration by 1 / speed
REQUEST_SLOTS = {"text"}  # the program inputs a SpeakRequest fills (see CompiledProgram.wire)


@dataclass
class WiredRequest:
    """One request's loop states (in cascade order) and the slots between them."""

    request_id: str
    states: list[tuple[Loop, LoopState]]
    slots: dict[str, Any]
    context: RequestContext

    @property
    def resident_bytes(self) -> int:
        return sum(state.resident_bytes for _, state in self.states)


@dataclass
class CompiledProgram:
    card: CardSpec
    program: ProgramSpec
    components: dict[str, Any]
    loops: dict[str, Loop]
    order: list[NodeSpec]
    settings: dict[str, Any] = field(default_factory=dict)  # the caller's overrides, to compile variants
    roles: dict[str, Any] = field(init=False)

    def __post_init__(self) -> None:
        self.roles = {c.role: c for c in self.components.values()}

    def voices(self) -> list[str]:
        talker = self.roles.get("talker")  # the talker conditions on the voice: it knows them
        return talker.voices() if talker is not None else list(self.card.voices)

    def _check_speed(self, request: SpeakRequest) -> None:
        if request.speed is None:
            return
        if not any(loop.kind == "sentence_frames" for loop in self.loops.values()):
            raise SpecError([SpecIssue("<request>", None, "speed",
                                       f"card {self.card.model!r} has no speed control (a sentence voice has)")])
        lo, hi = SPEED_RANGE
        if not lo <= request.speed <= hi:
            raise SpecError([SpecIssue("<request>", None, "speed", f"speed {request.speed} is outside {lo}..{hi}")])

    def resolve_voice(self, voice: str | None) -> str | None:
        """The voice a request speaks in (None: the card's default); SpecError for one the talker lacks."""
        voice = voice if voice is not None else self.card.defaults.voice
        known = self.voices()
        if voice is None and known:
            voice = known[0]
        if voice is not None and voice not in known:
            raise SpecError([SpecIssue("<request>", None, "voice",
                                       f"unknown voice {voice!r} (known: {', '.join(known) or 'none'})")])
        return voice

    def wire(self, request_id: str, request: SpeakRequest, emit: Callable[[StreamEvent], None]) -> WiredRequest:
        """Run the program's op nodes and create each loop's state. Raises SpecError for a bad request."""
        voice = self.resolve_voice(request.voice)
        ctx = RequestContext(request_id, request, self.card, self.roles, request.mode or self.card.defaults.mode,
                             voice, emit)
        slots: dict[str, Any] = {"text": request.text}  # keep REQUEST_SLOTS in step
        states: list[tuple[Loop, LoopState]] = []
        self._check_speed(request)
        loop_request = LoopRequest(request_id, request.seed, voice, request.speed or 1.0)
        for node in self.order:
            inputs = [slots[s] for s in node.inputs]
            if node.op is not None:
                value = OPS[node.op].fn(ctx, inputs, request.handoff or node.mode or "stream")
            else:
                loop = self.loops[node.loop]
                value = loop.output(node.output or node.id)
                states.append((loop, loop.init(inputs[0], value, loop_request)))
            if node.output is not None:
                slots[node.output] = value
        if request.profile != "serve" or request.replay is not None:
            _profile(request, states)
        return WiredRequest(request_id, states, slots, ctx)


def _profile(request: SpeakRequest, states: list[tuple[Loop, LoopState]]) -> None:
    """The rollout profile: a recorder in every loop state (and, to re-score, the recorded tokens forced)."""
    if request.profile != "rollout":
        what = f"unknown profile {request.profile!r} (known: serve, rollout)" if request.profile != "serve" else \
            "replay needs the rollout profile"
        raise SpecError([SpecIssue("<request>", None, "profile", what)])
    try:
        attach_recorders(states, request.replay)
    except ValueError as exc:
        raise SpecError([SpecIssue("<request>", None, "replay", str(exc))]) from None


def compile_program(card: CardSpec, program: ProgramSpec, settings: dict[str, Any] | None = None) -> CompiledProgram:
    """Check the program against the card, build the components and the loops."""
    params = check_program(card, program)
    components = build_components(card, params, settings or {})
    check_one_source(card, components)
    order = topological_order(program)
    loops: dict[str, Loop] = {}
    for node in order:
        if node.loop is not None:
            spec = card.loops[node.loop]
            loops[node.loop] = LOOP_KINDS[spec.kind](node.loop, spec, components[spec.component], len(loops))
    return CompiledProgram(card, program, components, loops, order, dict(settings or {}))


def check_program(card: CardSpec, program: ProgramSpec) -> dict[str, Any]:
    """Every check that needs no weights: the graph against the card, then the card's params.

    Returns each component's validated params. `omni cards validate` stops here.
    """
    check_loop_kinds(card)
    issues = IssueList(program.source)
    missing = [c for c in program.requires if c not in card.capabilities]
    if missing:
        issues.add(program.line("requires"), "requires", f"card {card.model!r} lacks capability {', '.join(missing)}")
    for j, slot in enumerate(program.inputs):
        if slot not in REQUEST_SLOTS:  # nothing would fill it: wire() would fail on every request
            issues.add(program.line(f"inputs.{j}"), f"inputs.{j}",
                       f"a request fills only {', '.join(sorted(REQUEST_SLOTS))}, not {slot!r}")
    used_loops: set[str] = set()
    for i, node in enumerate(program.nodes):
        if node.op is not None:
            _check_op_node(node, f"nodes.{i}", program, issues)
        else:
            _check_loop_node(node, f"nodes.{i}", program, card, used_loops, issues)
    check_emitters(program, issues)
    issues.raise_if_any()
    _check_slot_kinds(program, card, issues)
    issues.raise_if_any()
    params = component_params(card)
    check_weight_budget(card, params)  # before build_components draws a single weight
    return params


def _check_op_node(node: NodeSpec, key: str, program: ProgramSpec, issues: IssueList) -> None:
    op = OPS.get(node.op)
    if op is None:
        issues.add(program.line(f"{key}.op"), f"{key}.op", f"unknown op {node.op!r} (known: {', '.join(sorted(OPS))})")
        return
    if len(node.inputs) != op.num_inputs:
        issues.add(program.line(f"{key}.inputs"), f"{key}.inputs", f"op {op.name!r} takes {op.num_inputs} input(s)")
    if op.produces != (node.output is not None):
        what = "needs an `output` slot" if op.produces else "produces nothing (remove `output`)"
        issues.add(program.line(key), key, f"op {op.name!r} {what}")
    if node.mode is not None and not op.is_handoff:
        issues.add(program.line(f"{key}.mode"), f"{key}.mode", f"op {op.name!r} is not a hand-off; `mode` is for hand-offs")


def _check_loop_node(node: NodeSpec, key: str, program: ProgramSpec, card: CardSpec, used: set[str],
                     issues: IssueList) -> None:
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
    kinds = {slot: "text" for slot in program.inputs}
    index = {id(n): i for i, n in enumerate(program.nodes)}
    for node in topological_order(program):
        if node.op is not None:
            reads, makes, who = OPS[node.op].reads, OPS[node.op].makes, f"op {node.op!r}"
        else:
            kind, role = LOOP_KINDS[card.loops[node.loop].kind], card.components[card.loops[node.loop].component].role
            reads, makes, who = (with_role(kind.reads, role),), with_role(kind.makes, role), f"loop {node.loop!r}"
        for j, (slot, wanted) in enumerate(zip(node.inputs, reads, strict=True)):
            have = kinds.get(slot)
            if have is not None and not kinds_match(have, wanted):
                key = f"nodes.{index[id(node)]}.inputs.{j}"
                issues.add(program.line(key), key, f"slot {slot!r} holds {describe(have, SLOT_KINDS)}, but {who} "
                                                   f"reads {describe(wanted, SLOT_KINDS)}")
        if node.output is not None and makes is not None:
            kinds[node.output] = makes


def check_one_source(card: CardSpec, components: dict[str, Any]) -> None:
    """Facts a card states and its built components also know must agree (issue 11: one source each)."""
    issues = IssueList(card.source)
    roles = {c.role: c for c in components.values()}
    vocoder = roles.get("vocoder")
    if vocoder is not None and vocoder.sample_rate != card.sample_rate:  # the WAV header would lie
        issues.add(card.line("sample_rate"), "sample_rate",
                   f"the vocoder makes {vocoder.sample_rate} Hz audio, not {card.sample_rate}")
    talker = roles.get("talker")
    if talker is not None:
        unknown = [v for v in card.voices if v not in talker.voices()]
        if unknown:
            issues.add(card.line("voices"), "voices", f"the talker does not know {', '.join(map(repr, unknown))} "
                       f"(it knows: {', '.join(talker.voices()) or 'none'})")
    issues.raise_if_any()


def check_loop_kinds(card: CardSpec) -> None:
    """Each loop's kind is registered, runs the work unit the card says and drives a role it can."""
    issues = IssueList(card.source)
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
        role = card.components[loop.component].role
        if role not in kind.roles:
            issues.add(card.line(f"{key}.component"), f"{key}.component", f"a {loop.kind} loop cannot drive a {role}")
    issues.raise_if_any()


def component_params(card: CardSpec) -> dict[str, Any]:
    """Each component's `params` checked against its backend's schema; all issues at once."""
    if len({c.backend for c in card.components.values()}) > 1:
        raise SpecError([SpecIssue(card.source, card.line("components"), "components", "all components must share one backend")])
    out: dict[str, Any] = {}
    issues: list[SpecIssue] = []
    backend = next(iter(card.components.values())).backend
    try:  # the backend settings the card gives (model_path, dtype, …): the command line may add to them
        load_dataclass(settings_schema(backend), card.located, key="params", value=card.params)
    except SpecError as exc:
        issues.extend(exc.issues)
    for name, comp in card.components.items():
        schema = params_schema(comp.backend, comp.role)
        key = f"components.{name}.params"
        try:
            out[name] = load_dataclass(schema, card.located, key=key, value=comp.params)
        except SpecError as exc:
            issues.extend(exc.issues)
            continue
        # rules between fields (e.g. heads dividing the width), declared by the schema itself
        for field_name, message in getattr(out[name], "problems", lambda: [])():
            issues.append(SpecIssue(card.source, card.line(f"{key}.{field_name}"), f"{key}.{field_name}", message))
    if issues:
        raise SpecError(issues)
    return out


def build_components(card: CardSpec, params: dict[str, Any], settings: dict[str, Any]) -> dict[str, Any]:
    """Build the backend's components with the card's settings and the caller's overrides on top."""
    backend = next(iter(card.components.values())).backend
    overrides = {k: v for k, v in settings.items() if v is not None}
    merged = {**card.params, **overrides}
    source = card.source if not overrides else f"{card.source} with {', '.join(sorted(overrides))} from the command line"
    config = load_dataclass(settings_schema(backend), Located(merged, source))
    try:
        return backend_module(backend).build(card, params, config)
    except SpecError:
        raise
    except ValueError as exc:
        # params that pass their bounds can still disagree (d_model 64 in 7 heads): still the card's fault
        raise SpecError([SpecIssue(card.source, card.line("components"), "components",
                                   f"backend {backend!r} rejects these components: {exc}")]) from None
