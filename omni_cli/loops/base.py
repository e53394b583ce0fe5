"""The driven-loop contract: a loop describes each step (`next`), the engine runs it, the loop folds it in."""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from ..backends.base import Component
from .channel import Channel


class LoopStatus(enum.Enum):
    WAITING = "waiting"  # input not there yet
    RUNNING = "running"
    FINISHED = "finished"


@dataclass(slots=True)
class WorkPlan:
    """One WorkUnit, described before it runs. (Not frozen: one is made per WorkUnit, on the hot path,
    and a frozen dataclass costs four times as much to build; nothing changes a plan once made.)"""

    kind: str  # ar_prefill | ar_token | audio_chunk
    step: int  # index of this WorkUnit within its loop and request
    batch_key: tuple  # plans with equal keys may run as one batched call
    step_bytes: int  # bytes held while the step runs
    inputs: Any  # what the component's run() takes for this request
    forced_token: int | None = None  # AR echo mode: the token this step must produce
    # a paced loop's step (Loop.pacing), for the scheduler's clock: the work it does in the loop's units, and
    # whether its time is judged together with the next step's (the first piece of a split chunk)
    work_units: int = 0
    joins_next: bool = False


@dataclass(slots=True)
class Wait:  # not frozen either: one is made whenever a loop waits, most ticks for the vocoder
    describe: Callable[[], str]  # why, e.g. "thinker_out: 3 items (open, stream)"; called only when asked

    @property
    def reason(self) -> str:
        return self.describe()


@dataclass(frozen=True, slots=True)
class Pace:
    """The scheduler's word to a paced loop on how much to do this step (engine/pacing.py decides it from
    every request, the clock and the player's buffer; the loop obeys and never looks at either itself)."""

    shared: bool = False  # other requests are in this loop now: their steps share its component's calls
    largest: bool = False  # the listener waits whatever the size (the machine is slower than real time)
    affordable: int | None = None  # units of work the player's buffered audio pays for; None: the card's schedule


UNPACED = Pace()  # a request alone, on time: the card's schedule as written


@dataclass(frozen=True)
class Done:
    pass


DONE = Done()


@dataclass
class LoopState:
    """Per-request state every loop keeps; kinds extend it. Nothing per-request lives on the loop."""

    loop_id: str
    request_id: str
    status: LoopStatus = LoopStatus.WAITING
    step: int = 0  # WorkUnits done
    recorder: Any = None  # rollout profile: hears each WorkUnit (loops/recorder.py); None when serving
    out: Channel | None = None  # the channel the loop publishes into
    stop_reason: str | None = None  # why it finished (LoopResult.stop_reason); None: not stopped (cancelled, failed)

    def finish(self, reason: str | None) -> None:
        """The loop is done with this request: FINISHED, `reason` recorded, what it holds let go (`release`),
        then its output closed, so the reader hears the end after all that. Called again (an abort after the
        end), it records the later reason; the output closes once."""
        self.status = LoopStatus.FINISHED
        self.stop_reason = reason
        self.release()
        self.out.close()

    def release(self) -> None:
        """Let go of what the state holds besides its output (a cache, a model's state); `finish` calls it."""


@dataclass(frozen=True)
class LoopResult:
    """What a loop made for one request: the only source of its outputs and its stop reason."""

    loop_id: str
    num_steps: int
    outputs: dict[str, Any]
    stop_reason: str | None = None  # e.g. eos | max_tokens | max_positions; None: not stopped (cancelled, failed)
    truncated: bool = False  # it stopped at a cap, not at its natural end: the output is cut short


@dataclass(frozen=True)
class OutputBound:
    """What a loop can promise its reader before it runs, from the request's limits alone: at most
    `max_items` items (None: no bound known), after a prefill of at most `prompt_positions` positions."""

    max_items: int | None = None
    prompt_positions: int = 0


NO_BOUND = OutputBound()  # what a loop reading the request's text (no loop upstream) is given


@dataclass(frozen=True)
class Footprint:
    """One loop's share of a request's memory: what its state holds from admission to the end, and the
    most one of its steps holds while it runs (admission keeps that much headroom)."""

    resident_bytes: int = 0
    peak_step_bytes: int = 0


@dataclass(frozen=True)
class LoopRequest:
    """What a loop's init takes from the request, the same for every kind."""

    request_id: str
    seed: int
    voice: str | None = None
    speed: float = 1.0  # sentence voices: VITS length scale 1 / speed
    keep_encoded: Any = None  # input loops: the request's EncodedStore (omni_cli/encoded.py), or None


class Loop:
    """A driven loop over one component. Subclasses declare their kind (see registry.py) and implement
    init, next, advance, finalize; `footprint`, `advance_many` and `abort` have defaults."""

    kind: ClassVar[str]  # the name a card's loop `kind:` uses
    work_unit: ClassVar[str]  # the WorkUnit kind it runs (a card may omit `work_unit`: it follows from kind)
    roles: ClassVar[tuple[str, ...]]  # the component roles it may drive
    reads: ClassVar[str]  # the slot kind it reads (program/ops.py SLOT_KINDS)
    makes: ClassVar[str]  # the slot kind it publishes
    output: ClassVar[type]  # the channel class it publishes into
    takes_speed: ClassVar[bool] = False  # a request's `speed` stretches what it makes (sentence voices)
    # None: unpaced, `next(state)`. Else the card's `pace` (spec.card.LoopSpec), which the scheduler applies, and
    # `next(state, pace)` takes its Pace for this step
    pacing: str | None = None

    def __init__(self, loop_id: str, spec: Any, component: Component, stage: int):
        self.loop_id = loop_id
        self.spec = spec  # the card's LoopSpec
        self.component = component
        self.stage = stage  # position in the cascade, 0 = furthest from the audio

    def init(self, feed: Any, out: Any, request: LoopRequest) -> LoopState:
        """A request's state: `feed` is what its prompt slot holds, `out` the channel it publishes into."""
        raise NotImplementedError

    def footprint(self, state: LoopState, upstream: OutputBound) -> tuple[Footprint, OutputBound]:
        """This request's bytes in this loop, sized from `upstream` (the bound of the loop it reads, NO_BOUND
        for the request's text), and the bound this loop hands its own reader. Called once, at wiring
        (program/sizing.py), before anything runs; nothing sized here is written onto channels or states."""
        return Footprint(), NO_BOUND

    def next(self, state: LoopState) -> WorkPlan | Wait | Done:
        """The next step, without running it (a paced loop takes a second argument, the scheduler's Pace)."""
        raise NotImplementedError

    def advance(self, state: LoopState, plan: WorkPlan, output: Any) -> LoopState:
        """Fold one step's output into the state, publish what it made; returns the state."""
        raise NotImplementedError

    def advance_many(self, items: list[tuple[LoopState, WorkPlan, Any]]) -> list[Exception | None]:
        """Fold a batch: one entry per item, the exception that item raised or None. Loops that share
        work across a batch (vectorised sampling) override this."""
        errors: list[Exception | None] = []
        for state, plan, output in items:
            try:
                self.advance(state, plan, output)
                errors.append(None)
            except Exception as exc:
                errors.append(exc)
        return errors

    def finalize(self, state: LoopState) -> LoopResult:
        """The loop's outputs and stop reason; called once however the request ended (after abort if
        it did not finish)."""
        raise NotImplementedError

    def abort(self, state: LoopState) -> None:
        """Release what the state holds and close its output (cancel, failure): it finishes with no reason."""
        state.finish(None)

    @classmethod
    def describe(cls, spec: Any) -> str:
        """What a card's settings for this kind say, as `omni cards show` lists them (", max_tokens 64")."""
        return ""

    def start_recording(self, state: LoopState, replay: Mapping[str, Sequence[int]] | None) -> None:
        """The rollout profile: give `state` the recorder of this kind's behaviour columns (loops/recorder.py);
        with `replay` (loop id: recorded tokens), re-score them instead. A kind with no columns records nothing."""

    def behaviour_settings(self, seed: int) -> dict[str, Any]:
        """What decided each WorkUnit's behaviour beyond its recorded columns (a rollout sample's header):
        sampling, chunk sizes; `seed`, the request's."""
        return {}
