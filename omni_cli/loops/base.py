"""The driven-loop contract: a loop describes each step (`next`), the engine runs it, the loop folds it in."""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

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


@dataclass(frozen=True)
class LoopResult:
    loop_id: str
    num_steps: int
    outputs: dict[str, Any]


class Loop(Protocol):
    loop_id: str
    component: Component
    stage: int  # position in the cascade, 0 = furthest from the audio

    def next(self, state: LoopState) -> WorkPlan | Wait | Done: ...

    def advance(self, state: LoopState, plan: WorkPlan, output: Any) -> None: ...

    def finalize(self, state: LoopState) -> LoopResult: ...

    def abort(self, state: LoopState) -> None:
        """Release what the state holds and close its output (cancel, failure)."""
        ...
