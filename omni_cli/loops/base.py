"""The driven-loop contract: a loop describes each step (`next`), the engine runs it, the loop folds it in."""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..backends.base import Component


class LoopStatus(enum.Enum):
    WAITING = "waiting"  # input not there yet
    RUNNING = "running"
    FINISHED = "finished"


@dataclass(slots=True)
class WorkPlan:
    """One WorkUnit, described before it runs. (Not frozen: one is made per WorkUnit, on the hot path,
    and a frozen dataclass costs four times as much to build; nothing changes a plan once made.)"""

    loop_id: str
    request_id: str
    kind: str  # ar_prefill | ar_token | audio_chunk
    step: int  # index of this WorkUnit within its loop and request
    batch_key: tuple  # plans with equal keys may run as one batched call
    step_bytes: int  # bytes held while the step runs
    inputs: Any  # what the component's run() takes for this request
    forced_token: int | None = None  # AR echo mode: the token this step must produce


@dataclass(frozen=True)
class Wait:
    describe: Callable[[], str]  # why, e.g. "thinker_out: 3 items (open, stream)"; called only when asked

    @property
    def reason(self) -> str:
        return self.describe()


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
    resident_bytes: int = 0  # declared at init, reserved by the engine at admission
    metrics: dict[str, Any] = field(default_factory=dict)
    recorder: Any = None  # rollout profile: hears each WorkUnit (loops/recorder.py); None when serving


@dataclass(frozen=True)
class LoopResult:
    """What a loop made for one request: the only source of its outputs and its stop reason."""

    loop_id: str
    num_steps: int
    outputs: dict[str, Any]
    stop_reason: str | None = None  # e.g. eos | max_tokens | max_positions; None: not stopped (cancelled, failed)
    truncated: bool = False  # it stopped at a cap, not at its natural end: the output is cut short


class Loop:
    """A driven loop over one component. Subclasses implement next, advance, finalize, abort."""

    loop_id: str
    component: Component
    stage: int  # position in the cascade, 0 = furthest from the audio

    def next(self, state: LoopState) -> WorkPlan | Wait | Done:
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
        """Release what the state holds and close its output (cancel, failure)."""
        raise NotImplementedError
