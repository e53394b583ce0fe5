"""Compile a card and a program into loop instances and a node graph, and wire requests through it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..backends.base import LoadReporter, no_report
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
from .backends import backend_module, settings_schema
from .checks import check_program
from .ops import OPS, RequestContext, request_clips, request_images
from .sizing import RequestFootprint, size_request, upstream_loops

SPEED_RANGE = (0.25, 4.0)  # a request's speed: sentence voices stretch every duration by 1 / speed


@dataclass
class WiredRequest:
    """One request's loop states (in cascade order), the slots between them, and its footprint (sized once,
    here, before anything runs: program/sizing.py)."""

    request_id: str
    states: list[tuple[Loop, LoopState]]
    slots: dict[str, Any]
    context: RequestContext
    footprint: RequestFootprint


@dataclass
class CompiledProgram:
    card: CardSpec
    program: ProgramSpec
    components: dict[str, Any]
    loops: dict[str, Loop]
    order: list[NodeSpec]
    settings: dict[str, Any] = field(default_factory=dict)  # the caller's overrides, to compile variants
    roles: dict[str, Any] = field(init=False)
    upstream: dict[str, str | None] = field(init=False)  # each loop's upstream loop, to size requests

    def __post_init__(self) -> None:
        self.roles = {c.role: c for c in self.components.values()}
        self.upstream = upstream_loops(self.order)

    def threads(self) -> dict[str, dict[str, Any]]:
        """Each component's intra-op thread count and where it came from, for components that choose one
        (hf: backends/hf/threads.py), and "rows": the threads a batched call's rows split over, where more
        than one (backends/hf/rows.py); the trace's run record and `omni bench` show it."""
        out = {}
        for name, component in self.components.items():
            if (t := component.threads) is not None:
                out[name] = {"count": t.count, "source": t.source}
                if component.row_threads > 1:
                    out[name]["rows"] = component.row_threads
        return out

    def state_handoff(self) -> tuple[str, str] | None:
        """(sender, receiver): the components on either side of the program's hand-off that carries hidden
        states (an op registered with `states=True`), from the loops that make and read it; None if none."""
        made_by = {node.output: node for node in self.order if node.output is not None}
        for node in self.order:
            if node.op is None or not OPS[node.op].carries_states:
                continue
            source = made_by.get(node.inputs[0])
            reader = next((n for n in self.order if n.loop is not None and node.output in n.inputs), None)
            if source is not None and source.loop is not None and reader is not None:
                return self.loops[source.loop].spec.component, self.loops[reader.loop].spec.component
        return None

    def counted_loops(self) -> dict[str, str]:
        """The loop whose WorkUnits a client's usage counts as each kind of token ("text_tokens",
        "codec_tokens"): the loop whose stream an op declared with `counts` reads."""
        made_by = {node.output: node.loop for node in self.order if node.output is not None}
        return {OPS[node.op].counts: made_by[node.inputs[0]] for node in self.order
                if node.op is not None and OPS[node.op].counts and made_by.get(node.inputs[0])}

    def voices(self) -> list[str]:
        talker = self.roles.get("talker")  # the talker conditions on the voice: it knows them
        return talker.voices() if talker is not None else list(self.card.voices)

    @property
    def takes_speed(self) -> bool:
        """Whether a request's `speed` means anything here: a loop kind that stretches what it makes."""
        return any(loop.takes_speed for loop in self.loops.values())

    @property
    def takes_instructions(self) -> bool:
        """Whether a request's `instructions` reach a thinker that takes them (a chat model's system prompt)."""
        thinker = self.roles.get("thinker")
        return thinker is not None and thinker.takes_instructions

    def _check_speed(self, request: SpeakRequest) -> None:
        if request.speed is None:
            return
        if not self.takes_speed:
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

    def wire(self, request_id: str, request: SpeakRequest, emit: Callable[[StreamEvent], None],
             roles: dict[str, Any] | None = None) -> WiredRequest:
        """Run the program's op nodes and create each loop's state. Raises SpecError for a bad request.
        roles: the components the ops hand to feeds, when the engine's placement gives other views of them."""
        voice = self.resolve_voice(request.voice)
        clips = request_clips(request)
        if (clips or request.history) and "audio" not in self.program.inputs:  # never heard and silently dropped
            how = "can, with program chat" if "listen" in self.card.capabilities else "cannot listen"
            field = "audio" if request.audio is not None else "history"
            raise SpecError([SpecIssue("<request>", None, field, f"program {self.program.program!r} does not "
                                       f"listen (card {self.card.model!r} {how})")])
        images = request_images(request)
        if images and "images" not in self.program.inputs:  # never seen and silently dropped
            how = "can, with program chat" if "see" in self.card.capabilities else "cannot see"
            raise SpecError([SpecIssue("<request>", None, "images", f"program {self.program.program!r} does not "
                                       f"see (card {self.card.model!r} {how})")])
        ctx = RequestContext(request_id, request, self.card, roles or self.roles,
                             request.mode or self.card.defaults.mode, voice, emit)
        slots: dict[str, Any] = {"text": request.text, "audio": clips, "images": images}  # keep REQUEST_SLOTS in step
        states: list[tuple[Loop, LoopState]] = []
        self._check_speed(request)
        loop_request = LoopRequest(request_id, request.seed, voice, request.speed or 1.0, request.keep_encoded)
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
        return WiredRequest(request_id, states, slots, ctx, size_request(states, self.upstream))


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


def compile_program(card: CardSpec, program: ProgramSpec, settings: dict[str, Any] | None = None,
                    on_load: LoadReporter | None = None) -> CompiledProgram:
    """Check the program against the card, build the components and the loops; `on_load` hears the build's
    phases (a checkpoint that takes seconds to load says what it is doing)."""
    params = check_program(card, program)
    components = build_components(card, params, settings or {}, on_load)
    check_one_source(card, components)
    check_frames(program, components)
    order = topological_order(program)
    loops: dict[str, Loop] = {}
    for node in order:
        if node.loop is not None:
            spec = card.loops[node.loop]
            loops[node.loop] = LOOP_KINDS[spec.kind](node.loop, spec, components[spec.component], len(loops))
    return CompiledProgram(card, program, components, loops, order, dict(settings or {}))


def check_frames(program: ProgramSpec, components: dict[str, Any]) -> None:
    """A talker hand-off reads what the built talker makes: single codes, or frames of every codebook group."""
    talker = next((c for c in components.values() if c.role == "talker"), None)
    issues = IssueList(program.source)
    for node in program.nodes:
        op = OPS.get(node.op) if node.op else None
        if talker is not None and op is not None and op.reads_frames is not None \
                and op.reads_frames != talker.makes_frames:
            made = "frames of every codebook group" if talker.makes_frames else "one code a step"
            issues.add(program.line(f"nodes.{node.index}.op"), f"nodes.{node.index}.op",
                       f"op {op.name!r} does not read what this card's talker makes ({made})")
    issues.raise_if_any()


def check_one_source(card: CardSpec, components: dict[str, Any]) -> None:
    """Facts a card states and its built components also know must agree (one source each)."""
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


def build_components(card: CardSpec, params: dict[str, Any], settings: dict[str, Any],
                     on_load: LoadReporter | None = None, only: str | None = None) -> dict[str, Any]:
    """Build the backend's components with the card's settings and the caller's overrides on top.

    `only`: a worker's one component; a backend may then build less (the hf vocoder loads token2wav's
    weights alone) or, where its components cost little or need each other, all of them."""
    backend = next(iter(card.components.values())).backend
    overrides = {k: v for k, v in settings.items() if v is not None}
    merged = {**card.params, **overrides}
    source = card.source if not overrides else f"{card.source} with {', '.join(sorted(overrides))} from the command line"
    config = load_dataclass(settings_schema(backend), Located(merged, source))
    try:
        return backend_module(backend).build(card, params, config, on_load=on_load or no_report, only=only)
    except SpecError:
        raise
    except ValueError as exc:
        # params that pass their bounds can still disagree (d_model 64 in 7 heads): still the card's fault
        raise SpecError([SpecIssue(card.source, card.line("components"), "components",
                                   f"backend {backend!r} rejects these components: {exc}")]) from None
