"""A model card: what the model *is* — its components, loops, voices, defaults and limits."""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from .errors import IssueList, any_dropped
from .placement import PlacementSpec, check_placement
from .schema import bounded, check_dataclass
from .yaml_source import Located

NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}")  # components, loops, nodes, slots
PROGRAM_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")  # a card's default program: a shipped name, never a path
MAX_TOKENS_LIMIT = 65536  # no card may ask an AR loop for more steps than this


@dataclass
class ComponentSpec:
    backend: Literal["numpy", "hf", "piper"]
    role: Literal["thinker", "talker", "vocoder", "phonemizer", "acoustic", "audio_encoder",
                  "image_encoder"]
    params: dict[str, Any] = field(default_factory=dict)  # checked against the backend's schema


@dataclass
class SamplingSpec:
    temperature: float = bounded(0.0, min=0.0, max=10.0, doc="0 is greedy")
    top_k: int = bounded(0, min=0, max=1 << 20, doc="0 keeps every token")
    top_p: float = bounded(1.0, min=0.0, max=1.0)
    repetition_penalty: float = bounded(1.0, min=0.01, max=10.0)


@dataclass
class LoopSpec:
    kind: str  # a registered loop kind (omni_cli/loops/registry.py), checked when the card is compiled
    component: str
    prompt_slot: str
    work_unit: str | None = None  # follows from kind; when written, it must agree
    max_tokens: int = bounded(256, min=1, max=MAX_TOKENS_LIMIT, doc="ar_decode: most tokens per request")
    sampling: SamplingSpec = field(default_factory=SamplingSpec)
    chunk_codes: int = bounded(25, min=0, max=4096, doc="audio_decode: codes per chunk, 0 = whole utterance")
    first_chunk_codes: int | list[int] = bounded(
        0, min=0, max=4096, doc="audio_decode: codes of the first chunk, doubling chunk by chunk up to chunk_codes, "
        "or of the first chunks in order ([12, 16, 24]: then 48, 96, ...); 0 = every chunk is chunk_codes")
    # audio_decode: how chunks after the first grow. double: first_chunk_codes doubling up to chunk_codes.
    # slack: as many codes as the audio made so far, ahead of real time, pays for at the speed the chunks
    # before it were made (at least first_chunk_codes, at most chunk_codes): a player that starts at the first
    # audio is not kept waiting while the machine is faster than real time, with as few chunks as that allows
    chunk_growth: Literal["double", "slack"] = bounded(
        "double", doc="audio_decode: how chunks after the first grow: double, or by the playback slack")
    first_audio_codes: int = bounded(
        0, min=0, max=4096, doc="audio_decode: the first chunk's audio in two pieces, its first this many codes "
        "as soon as they are vocoded and the rest from the same vocoder window right after; 0 = one piece")
    shared_first_chunks: int = bounded(
        1, min=1, max=12, doc="audio_decode: beside other requests, a request's first chunk is this many of the "
        "schedule's first chunks as one (1 = the schedule as it is): shared vocoder calls make each chunk later "
        "than for a request alone, and a short first chunk's audio runs out before the next comes")
    shared_first_codes: int = bounded(
        0, min=0, max=4096, doc="audio_decode: beside other requests, a request's first chunk is this many codes "
        "(0 = shared_first_chunks of the schedule's chunks); the chunk after it is the schedule's next after the "
        "one it ends in. Sets the shared first chunk apart from the schedule a request alone gets")
    largest_when_slow: bool = bounded(
        False, doc="audio_decode: once a request's chunk took over twice as long to make as its audio lasts, its "
        "next chunk is chunk_codes long: no size keeps a player fed then, and fewer windows re-read less context")

    def chunk_size(self, index: int) -> int:
        """Codes in chunk `index` (a result of 0 means one whole-utterance chunk): a small first chunk
        brings the first audio early; each later one (after the first chunks, when `first_chunk_codes` lists
        them), twice the one before up to `chunk_codes`, re-reads less context per code. (Whether a chunk
        arrives before the audio before it has played depends on the machine: `omni bench` reports the
        longest wait as "stall max".)"""
        firsts = self.first_chunks
        if index < len(firsts):
            return min(self.chunk_codes, firsts[index])
        doublings = index - len(firsts) + 1
        if not firsts or doublings >= 12:  # 2**12 * 1 code covers the 4096-code maximum
            return self.chunk_codes
        return min(self.chunk_codes, firsts[-1] << doublings)

    @property
    def first_chunks(self) -> tuple[int, ...]:
        """first_chunk_codes as the chunks it names (none for 0): one number is the first chunk alone."""
        firsts = self.first_chunk_codes
        return tuple(firsts) if isinstance(firsts, list) else (firsts,) if firsts else ()

    def shared_first(self) -> tuple[int, int]:
        """Beside other requests, the first chunk: its codes, and how many of the schedule's chunks it reaches
        into (1: it is the schedule's own first chunk, nothing shared)."""
        if not self.chunk_codes:
            return 0, 1
        if not self.shared_first_codes:
            count = self.shared_first_chunks
            return sum(self.chunk_size(i) for i in range(count)), count
        count, start = 0, 0
        while start < self.shared_first_codes:  # each chunk of the schedule that starts inside it
            start, count = start + self.chunk_size(count), count + 1
        return self.shared_first_codes, count


@dataclass
class DefaultsSpec:
    program: str = "speak"
    mode: Literal["echo", "chat"] = "echo"
    voice: str | None = None


@dataclass
class LimitsSpec:
    max_text_chars: int = bounded(2000, min=1, max=1_000_000)
    memory_budget_mib: int = bounded(1024, min=1, max=1 << 20, doc="admission budget per engine")


@dataclass
class BatchingSpec:
    max_batch: int = bounded(16, min=1, max=4096)
    sample_tolerance: float = bounded(0.0, min=0.0, max=1.0, doc="batched vs unbatched, max abs sample diff")


@dataclass
class CardSpec:
    model: str
    description: str
    components: dict[str, ComponentSpec]
    loops: dict[str, LoopSpec]
    capabilities: list[str] = field(default_factory=list)
    seed: int = bounded(0, min=0, max=2**32 - 1)
    sample_rate: int = bounded(24000, min=8000, max=192000)
    params: dict[str, Any] = field(default_factory=dict)  # backend settings (model_path, dtype, device)
    voices: list[str] = field(default_factory=list)
    defaults: DefaultsSpec = field(default_factory=DefaultsSpec)
    limits: LimitsSpec = field(default_factory=LimitsSpec)
    batching: BatchingSpec = field(default_factory=BatchingSpec)
    placement: dict[str, PlacementSpec] = field(default_factory=dict)  # component -> where it runs; absent: inline
    source: str = field(default="<memory>", init=False)  # the file it came from
    located: Located | None = field(default=None, init=False, repr=False)  # for file:line in later checks
    dropped: frozenset[str] = field(default=frozenset(), init=False, repr=False)  # left out or wired wrong

    def line(self, key: str) -> int | None:
        return self.located.line(key) if self.located else None

    def was_dropped(self, *keys: str) -> bool:
        """A key later checks must not judge: its value was left out for an issue already reported."""
        return any_dropped(self.dropped, keys)

    def replaced(self, **changes: Any) -> CardSpec:
        """`dataclasses.replace`, keeping what the card knows of its file (source, located, dropped), which
        `replace` leaves at their defaults: a variant made for a bench or a test still names this card's lines."""
        variant = replace(self, **changes)
        variant.source, variant.located, variant.dropped = self.source, self.located, self.dropped
        return variant

    def loop_for_role(self, role: str) -> LoopSpec:
        """The loop that drives the component playing `role` (thinker, talker, vocoder)."""
        component = next(name for name, comp in self.components.items() if comp.role == role)
        return next(loop for loop in self.loops.values() if loop.component == component)


def check_card(src: Located) -> tuple[CardSpec | None, IssueList]:
    """Every issue of a parsed card in one pass — schema, then the rules that tie its parts together — and as
    much of the card as is valid (None when it is not even a mapping). `card.dropped` says what was left out,
    or found wired wrong, for an issue: checks of a program against the card skip those."""
    issues = IssueList(src.file)
    issues.extend(src.issues)
    card = check_dataclass(CardSpec, src, issues)
    if card is None:
        return None, issues
    card.source = src.file
    card.located = src
    _check_loops(card, src, issues)
    _check_names_and_voices(card, src, issues)
    check_placement(card.placement, {n: c.backend for n, c in card.components.items()}, issues, src.line)
    card.dropped = frozenset(issues.dropped)
    return card, issues


def load_card(src: Located) -> CardSpec:
    """A valid card, or SpecError with every issue."""
    card, issues = check_card(src)
    issues.raise_if_any()
    return card


def _check_loops(card: CardSpec, src: Located, issues: IssueList) -> None:
    """Each loop drives one declared component, no component has two loops, no two loops share a prompt slot.

    A loop wired wrong is counted as dropped: a program's checks against it would only repeat the issue."""
    used: dict[str, str] = {}
    slots: dict[str, str] = {}
    unresolved = False  # a loop names a wrong component: most likely it meant the one no loop drives
    for name, loop in card.loops.items():
        key = f"loops.{name}"
        comp = card.components.get(loop.component)
        if comp is None:
            if not issues.was_dropped(f"components.{loop.component}"):  # else its own issue says why
                declared = ", ".join(card.components) or "none"
                issues.add(src.line(f"{key}.component"), f"{key}.component",
                           f"names undeclared component {loop.component!r} (components: {declared})")
            unresolved = True
            issues.dropped.add(key)
            continue
        if loop.component in used:
            issues.add(src.line(f"{key}.component"), f"{key}.component",
                       f"component {loop.component!r} is already driven by loop {used[loop.component]!r} (experts are disjoint)")
            unresolved = True
            issues.dropped.add(key)
        used[loop.component] = name
        if loop.prompt_slot in slots:
            issues.add(src.line(f"{key}.prompt_slot"), f"{key}.prompt_slot",
                       f"slot {loop.prompt_slot!r} is already the prompt slot of loop {slots[loop.prompt_slot]!r}")
            issues.dropped.add(key)
        slots[loop.prompt_slot] = name
        _check_chunks(loop, key, src, issues)
    written = src.value.get("loops")  # a loop left out for its own issue may still name a component
    named = {loop.get("component") for loop in written.values() if isinstance(loop, dict)
             and isinstance(loop.get("component"), str)} if isinstance(written, dict) else None
    for name in card.components:
        if name not in used and named is not None and name not in named and not unresolved:
            issues.add(src.line(f"components.{name}"), f"components.{name}", "no loop drives this component")
    _check_roles(card, src, issues)


def _check_chunks(loop, key: str, src: Located, issues: IssueList) -> None:
    """An audio loop's chunk settings agree with each other (the first chunks, the first audio, the shared first)."""
    firsts, first = loop.first_chunks, loop.chunk_size(0)
    if isinstance(loop.first_chunk_codes, list) and (not firsts or min(firsts) < 1):
        issues.add(src.line(f"{key}.first_chunk_codes"), f"{key}.first_chunk_codes",
                   "a list of chunks needs one or more, each at least 1 (0 alone: every chunk is chunk_codes)")
    elif firsts and max(firsts) > loop.chunk_codes:
        why = (f"must be at most chunk_codes ({loop.chunk_codes})" if loop.chunk_codes else
               "needs chunk_codes above 0: chunk_codes 0 decodes the whole utterance as one chunk")
        issues.add(src.line(f"{key}.first_chunk_codes"), f"{key}.first_chunk_codes", why)
    if loop.first_audio_codes and not 0 < loop.first_audio_codes < first:
        why = (f"must be below the first chunk's {first} codes (first_chunk_codes, else chunk_codes)" if first else
               "needs chunk_codes above 0: chunk_codes 0 decodes the whole utterance as one chunk")
        issues.add(src.line(f"{key}.first_audio_codes"), f"{key}.first_audio_codes", why)
    if loop.shared_first_codes:  # (with chunk_codes 0, one chunk: nothing is shared, as shared_first_chunks)
        why = ("set shared_first_codes or shared_first_chunks, not both" if loop.shared_first_chunks > 1 else
               f"must be above the first chunk's {first} codes (first_chunk_codes, else chunk_codes)"
               if loop.shared_first_codes <= first else None)
        if why:
            issues.add(src.line(f"{key}.shared_first_codes"), f"{key}.shared_first_codes", why)
    if loop.chunk_growth == "slack" and not (firsts and loop.chunk_codes):
        issues.add(src.line(f"{key}.chunk_growth"), f"{key}.chunk_growth",
                   "slack needs first_chunk_codes and chunk_codes above 0 (the smallest and largest chunk)")


def _check_roles(card: CardSpec, src: Located, issues: IssueList) -> None:
    """The components a capability needs: a cascade for text_to_speech, one audio tower for listen, one vision
    tower for see."""
    towers = {"listen": "audio_encoder", "see": "image_encoder"}  # input towers beside the cascade (program chat)
    roles = sorted(c.role for c in card.components.values())
    cascade = [r for r in roles if r not in towers.values()]
    if "text_to_speech" in card.capabilities and cascade != ["talker", "thinker", "vocoder"] \
            and not issues.was_dropped("components"):
        issues.add(src.line("components"), "components", "text_to_speech needs one thinker, one talker and one vocoder")
    for capability, role in towers.items():
        count = roles.count(role)
        if (capability in card.capabilities) != (count == 1) and not issues.was_dropped("components"):
            issues.add(src.line("capabilities"), "capabilities", f"{capability} goes with exactly one {role} component"
                       if count <= 1 else f"a card has at most one {role}")


def _check_names_and_voices(card: CardSpec, src: Located, issues: IssueList) -> None:
    for section in ("components", "loops"):  # names are shown on terminals: plain words, no escape sequences
        for name in getattr(card, section):
            if not NAME.fullmatch(name):
                issues.add(src.line(f"{section}.{name}"), f"{section}.{name}", f"a name is letters, digits, _ . - "
                           f"(at most 64), not {name!r}")
    if not PROGRAM_NAME.fullmatch(card.defaults.program):  # a path here would make omni read any file
        issues.add(src.line("defaults.program"), "defaults.program",
                   "names a shipped program (see `omni programs list`), not a path; paths come only from --program")
    if issues.was_dropped("voices"):
        return
    for i, voice in enumerate(card.voices):  # `[alto, alto]` is a mistake, not two voices
        if voice in card.voices[:i]:
            issues.add(src.line(f"voices.{i}"), f"voices.{i}", f"duplicate voice {voice!r}")
    if card.defaults.voice is not None and card.defaults.voice not in card.voices:
        issues.add(src.line("defaults.voice"), "defaults.voice", f"unknown voice (card voices: {', '.join(card.voices) or 'none'})")
