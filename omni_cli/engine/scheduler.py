"""The Scheduler decides: which queued requests are admitted, which ready plans run, grouped and ordered,
and every reservation of the memory budget (a request's resident bytes, a batch's step bytes, their refunds).

It never runs anything and never ends a request itself: `schedule()` returns a `Decision` and `reserve_step()`
a `StepVerdict` the engine carries out (nano-vllm's `schedule()`; the engine's fold is its `postprocess()`).
"""

from __future__ import annotations

import enum
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from operator import attrgetter
from typing import Any, NamedTuple

from ..loops import Wait, WorkPlan
from ..spec.stream import RequestStatus
from .admission import AdmissionError, MemoryBudget, mib
from .pacing import Pacer

POLICIES = ("latency-first", "round-robin")


def one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if isinstance(exc, (ValueError, RuntimeError, OSError)) else f"{type(exc).__name__}: {text}"


class Entry(NamedTuple):
    """A plan and whose it is: the request, the loop and the loop state it advances."""

    plan: WorkPlan
    stage: int
    request: Any
    loop: Any
    state: Any


@dataclass(slots=True)
class Group:  # one per batch each tick: slotted, its entries passed in (a default factory costs a call)
    batch_key: tuple
    stage: int
    entries: list[Entry]


@dataclass(slots=True)
class Decision:
    """One tick's decisions, in the order the engine carries them out. (Made once per tick: schedule()
    fills local lists and passes them in, no default factories.)"""

    admitted: list[Any]
    ended: list[tuple[Any, str | None]]  # (request, None: finished | error)
    stalled: str | None  # every running loop waits on another and nothing is in flight: why
    batches: list[Group]


# an Entry from a tuple in one C call (Entry(...) goes through NamedTuple's Python-level __new__), and the
# groups' sort key as a C getter: both run every tick
_entry = partial(tuple.__new__, Entry)
_STAGE = attrgetter("stage")


def group_plans(entries: Sequence[Entry], max_batch: int) -> list[Group]:
    """Plans with equal batch keys form groups of at most `max_batch`, in first-seen order."""
    if len(entries) == 1:  # the common case at concurrency 1
        return [Group(entries[0].plan.batch_key, entries[0].stage, [entries[0]])]
    groups: dict[tuple, Group] = {}
    ordered: list[Group] = []
    for entry in entries:
        key = entry.plan.batch_key
        group = groups.get(key)
        if group is None or len(group.entries) >= max_batch:
            group = groups[key] = Group(key, entry.stage, [entry])
            ordered.append(group)
        else:
            group.entries.append(entry)
    return ordered


def order_groups(groups: list[Group], policy: str) -> list[Group]:
    """latency-first: the stage nearest the audio output first; round-robin: as the requests came."""
    if policy == "latency-first":
        if len(groups) < 2:
            return groups
        return sorted(groups, key=_STAGE, reverse=True)  # stable (reverse too): ties keep request order
    if policy == "round-robin":
        return groups
    raise ValueError(f"unknown policy {policy!r} (known: {', '.join(POLICIES)})")


class Verdict(enum.Enum):
    """What to do with a batch of ready plans (`Scheduler.reserve_step`)."""

    RUN = "run"  # its step bytes are reserved: launch it
    WAIT = "wait"  # calls in flight hold step bytes: plan it again once they refund
    SPLIT = "split"  # too big together: launch its halves, each decided again
    FAIL = "fail"  # one request's step can never fit: it fails


class StepVerdict(NamedTuple):
    verdict: Verdict
    reserved: int = 0  # RUN: the bytes to refund when the call is folded
    split_at: int = 0  # SPLIT: the first half's length
    error: str = ""  # FAIL: why


_WAIT = StepVerdict(Verdict.WAIT)
_RUNNING = RequestStatus.RUNNING


class Scheduler:
    """Holds the queue, the running set and the memory budget; admission reserves resident bytes, each
    launch a batch's step bytes, and policy orders the work."""

    def __init__(self, policy: str, max_batch: int, budget: MemoryBudget, pacer: Pacer | None = None):
        """pacer: paces the paced loops (engine/pacing.py); without one, each runs its card's schedule."""
        if policy not in POLICIES:
            raise ValueError(f"unknown policy {policy!r} (known: {', '.join(POLICIES)})")
        self.policy = policy
        self.max_batch = max_batch
        self.budget = budget
        self.pacer = pacer
        self.queued: deque[Any] = deque()
        self.running: list[Any] = []

    def add(self, request: Any) -> None:
        """Queue a wired request; AdmissionError if it can never fit the budget, even alone."""
        resident, peak, capacity = request.resident_bytes, request.peak_step_bytes, self.budget.capacity
        if resident + peak > capacity:
            raise AdmissionError(f"request {request.request_id} needs {mib(resident + peak)} ({mib(resident)} "
                                 f"resident + {mib(peak)} per step), over the {mib(capacity)} memory budget")
        self.queued.append(request)

    def remove(self, request: Any) -> None:
        """A request ended (finished, failed, cancelled): it leaves the queue or the running set, and its
        resident bytes go back to the budget."""
        self.budget.release(request.reserved_bytes)
        request.reserved_bytes = 0
        if request in self.running:
            self.running.remove(request)
        elif request in self.queued:
            self.queued.remove(request)

    def runnable(self, entries: list[Entry]) -> list[Entry]:
        """The entries whose request still runs and is not being cancelled (a plan made before it ended)."""
        if len(entries) == 1:  # most ticks: no list to build
            r = entries[0].request
            return entries if r.status is _RUNNING and not r.cancel_requested else []
        return [e for e in entries if e.request.status is _RUNNING and not e.request.cancel_requested]

    def reserve_step(self, live: list[Entry], calls_in_flight: bool) -> StepVerdict:
        """Reserve a batch's step bytes, or say why not. Admission left room for any single step, so a batch
        that does not fit splits; calls in flight hold step bytes, so with any in flight it waits instead."""
        component = live[0].loop.component
        need = int(component.batch_step_bytes(live[0].plan.kind, [e.plan.step_bytes for e in live]))
        if self.budget.try_reserve(need):
            return StepVerdict(Verdict.RUN, need)
        if calls_in_flight:
            return _WAIT
        if len(live) == 1:
            budget = self.budget
            return StepVerdict(Verdict.FAIL, error=f"step needs {mib(need)} but only {mib(budget.free)} "
                                                   f"of {mib(budget.capacity)} is free")
        return StepVerdict(Verdict.SPLIT, split_at=len(live) // 2)

    def refund_step(self, reserved: int, component: Any | None) -> None:
        """A call came back: its step bytes return; what the component kept resident stays reserved
        (None: the call itself broke, nothing ran to keep)."""
        self.budget.release(reserved)
        if component is not None:
            self.budget.keep(component)

    def reset_peak(self) -> None:
        """Count the budget's peak afresh, from what is reserved now."""
        self.budget.peak_reserved = self.budget.reserved

    def schedule(self, in_flight: set[int]) -> Decision:
        """Admit what fits, then collect every running request's next plan, grouped and ordered.

        in_flight: ids of loop states with a step in flight; they are skipped (not re-planned) but
        keep their request running.
        """
        admitted: list[Any] = []
        if self.queued:
            self._admit(admitted)
        running = self.running
        if self.policy == "round-robin" and len(running) > 1:
            running.append(running.pop(0))  # a different request goes first each tick
        entries: list[Entry] = []
        waits: list[tuple[Any, str, Wait]] = []
        ended: list[tuple[Any, str | None]] = []
        pacer = self.pacer
        if pacer is not None:
            pacer.new_tick()
        for r in running:
            pending = False
            for loop, state in r.wired.states:
                if in_flight and id(state) in in_flight:
                    pending = True
                    continue
                try:
                    if loop.pacing is None or pacer is None:
                        nxt = loop.next(state)
                    else:  # the Pace for this step: from every request, the clock and the player's buffer
                        nxt = pacer.next(r, loop, state, self._everyone)
                except Exception as exc:  # a bad input or a broken feed fails this request alone
                    ended.append((r, f"{loop.loop_id}: {one_line(exc)}"))
                    break
                if nxt.__class__ is WorkPlan:
                    entries.append(_entry((nxt, loop.stage, r, loop, state)))
                    pending = True
                elif nxt.__class__ is Wait:
                    waits.append((r, loop.loop_id, nxt))
                    pending = True
            else:
                if not pending:
                    ended.append((r, None))
        if entries:
            return Decision(admitted, ended, None, order_groups(group_plans(entries, self.max_batch), self.policy))
        stalled = None
        if not in_flight and len(ended) < len(running):
            # every loop waits on another: a broken program, never a reason to spin forever
            stalled = "; ".join(f"{r.request_id}/{loop_id}: {w.reason}" for r, loop_id, w in waits[:3])
        return Decision(admitted, ended, stalled, [])

    def _everyone(self) -> list[Any]:
        return [*self.running, *self.queued]

    def folded(self, entries: list[Entry]) -> None:
        """A paced loop's batch is folded into its loops: its pacing learns from the steps' time."""
        if self.pacer is not None:
            for e in entries:
                self.pacer.folded(e.request, e.loop, e.plan)

    def _admit(self, admitted: list[Any]) -> None:
        while self.queued:
            r = self.queued[0]
            headroom = max([r.peak_step_bytes] + [x.peak_step_bytes for x in self.running])
            resident = r.resident_bytes
            if self.budget.reserved + resident + headroom > self.budget.capacity:
                return  # waits for running requests to finish and refund
            self.budget.try_reserve(resident)
            r.reserved_bytes = resident
            r.status = RequestStatus.RUNNING
            self.queued.popleft()
            self.running.append(r)
            admitted.append(r)
