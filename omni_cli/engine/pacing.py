"""Pacing: how much a paced loop does this step, decided from every request, the clock and the player's buffer.

A paced loop (`Loop.pacing`, the card's `pace`) is told a `Pace` with each step and obeys it; it never reads
the clock or another request itself, so its chunks follow from its inputs and the Pace alone. The Pacer is the
scheduler's: it counts who shares a loop, times each paced step from its plan to its fold, and follows each
request's player, which starts at the request's first audio and plays in real time.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..loops import Pace, WorkPlan
from ..loops.base import LoopStatus

# the Paces most steps get, made once: a loop keeps a Wait while its Pace is the same object
_PACES = {(shared, largest): Pace(shared, largest) for shared in (False, True) for largest in (False, True)}
_FINISHED = LoopStatus.FINISHED


@dataclass(slots=True)
class PaceRecord:
    """What the pacer knows of one request's paced loop: its clock readings, never its chunks."""

    opened_at: float | None = None  # the plan of the step being timed
    samples_at_open: int = 0  # the request's audio then
    joined: bool = False  # the step timed is the first piece of a split chunk: the next one's fold judges both
    behind: bool = False  # largest_when_slow: the last step took over BEHIND_FACTOR times its audio's length
    first_audio_at: float | None = None  # slack: when the player started
    last_audio_at: float | None = None
    per_unit_s: float | None = None  # slack: seconds per unit of work, as this request last saw them


class Pacer:
    """Decides each paced step's Pace (`next`) and learns from its fold (`folded`)."""

    # slack: of the audio ahead of real time, what the next step may spend (the talker needs some)
    SLACK_SHARE = 0.8
    # largest_when_slow: a step is behind when it took more than this many times its audio's length. Not 1: a
    # small chunk's call is mostly fixed cost, so on a machine near real time one slow moment makes it take
    # longer than its audio, where the next chunk at the largest size would come far later (a stall)
    BEHIND_FACTOR = 2.0
    clock = staticmethod(time.perf_counter)  # the only clock pacing reads (tests move a fake one)

    def __init__(self, sample_rate: int, clock: Callable[[], float] | None = None):
        self.sample_rate = sample_rate
        if clock is not None:
            self.clock = clock
        self._active: Counter | None = None  # per loop id: requests whose state in it has not finished

    def new_tick(self) -> None:
        self._active = None  # counted again when the tick's first paced loop asks

    def next(self, r: Any, loop: Any, state: Any, others: Callable[[], Any]) -> Any:
        """The loop's next step under this tick's Pace for it; a plan starts (or continues) its timing.
        `others()`: every request in the engine, to count who shares the loop."""
        rec = r.pacing.get(loop.loop_id)
        if rec is None:
            rec = r.pacing[loop.loop_id] = PaceRecord()
        if self._active is None:
            self._active = _count_active(others())
        nxt = loop.next(state, self._pace(r, loop, rec, self._active[loop.loop_id] > 1))
        if nxt.__class__ is WorkPlan and not rec.joined and loop.pacing != "schedule":
            rec.opened_at, rec.samples_at_open = self.clock(), r.audio_samples
        return nxt

    def _pace(self, r: Any, loop: Any, rec: PaceRecord, shared: bool) -> Pace:
        if loop.pacing == "slack" and rec.per_unit_s and rec.first_audio_at is not None:
            # the player's buffer: the audio made, less what has played since the first of it
            ahead = r.audio_samples / self.sample_rate - (self.clock() - rec.first_audio_at)
            return Pace(shared, False, int(ahead * self.SLACK_SHARE / rec.per_unit_s))
        return _PACES[shared, rec.behind]

    def folded(self, r: Any, loop: Any, plan: WorkPlan) -> None:
        """A paced step's output is folded (its audio emitted): what its time says of the machine's pace."""
        rec = r.pacing.get(loop.loop_id)
        if rec is None or rec.opened_at is None:
            return
        now = self.clock()
        if plan.joins_next:
            rec.joined = True
        else:
            made_s = (r.audio_samples - rec.samples_at_open) / self.sample_rate
            rec.behind = loop.pacing == "largest_when_slow" and now - rec.opened_at > self.BEHIND_FACTOR * made_s
            rec.joined = False
        if loop.pacing == "slack" and plan.work_units:
            if rec.first_audio_at is None and r.audio_samples:
                rec.first_audio_at = now
            # the first step from its plan; later ones from the audio before them, the talker's time included
            since = rec.opened_at if rec.last_audio_at is None else rec.last_audio_at
            rec.per_unit_s = (now - since) / plan.work_units
            rec.last_audio_at = now


def _count_active(requests: Any) -> Counter:
    """Per paced loop id: the requests whose state in it has not finished (queued ones included)."""
    active: Counter = Counter()
    for r in requests:
        for loop, state in r.wired.states:
            if loop.pacing is not None and state.status is not _FINISHED:
                active[loop.loop_id] += 1
    return active
