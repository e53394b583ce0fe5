"""The far side of a replica: one whole engine in a worker process or a Ray actor, driven by exchanges.

The pool cannot call into the replica's engine step by step (each call crosses a pipe or goes through
Ray), so it trades: one `exchange()` hands over the commands queued since the last one (submit,
cancel all) and comes back after the engine has run for up to `budget_s` with every stream and trace
event made meanwhile. A replica never pushes; the pool keeps one exchange in flight per replica.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ...spec.stream import RequestDone, RequestStatus
from ..scheduler import one_line

SUBMIT = "submit"
CANCEL_ALL = "cancel_all"


@dataclass
class Report:
    """What one exchange brings back: stream events and trace events in the order they happened."""

    events: list = field(default_factory=list)
    traces: list = field(default_factory=list)


class ReplicaServer:
    """An engine built where the replica runs (`make_engine()`), its events kept until the next exchange."""

    def __init__(self, make_engine: Callable[[], Any]):
        self.engine = make_engine()
        # the engine's clock origin on this machine's monotonic clock: the pool shifts trace times by it
        self.clock_origin_s = time.perf_counter() - self.engine.now()
        self._traces: list = []
        self.engine.subscribe(self._keep)

    def hello(self) -> float:
        """The start-up check (the engine is built); returns the engine's clock origin."""
        return self.clock_origin_s

    def exchange(self, commands: list[tuple[str, Any]], budget_s: float) -> Report:
        engine = self.engine
        refused = []
        for command, arg in commands:
            if command == SUBMIT:
                try:
                    engine.submit(arg)
                except Exception as exc:  # the pool checked the request; what is left (e.g. memory) fails it alone
                    refused.append(RequestDone(arg.request_id, RequestStatus.FAILED, one_line(exc), {}))
            elif command == CANCEL_ALL:
                engine.cancel_all()
            else:
                raise ValueError(f"unknown replica command {command!r}")
        deadline = time.perf_counter() + budget_s
        while not engine.is_idle and time.perf_counter() < deadline:
            engine.step()
        traces, self._traces = self._traces, []
        return Report([*refused, *engine.poll()], traces)

    def _keep(self, event) -> None:
        self._traces.append(event)

    def close(self) -> None:
        """Cancel what runs and close the engine's executors (its own workers and actors)."""
        self.engine.close()
