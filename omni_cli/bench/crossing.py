"""What crosses the driver: the bytes each placed component's calls carry there and back, per WorkUnit.

A component in another process (`process`, `ray`) gets each step's inputs pickled from the driver and
sends its outputs back the same way: the thinker's logits, hidden states and input embeddings come
back, and the talker's conditioning made from them goes out again. A metered run wraps each executor,
pickles what the executor would send (states as the handles it sends: a state travels once) and what
came back, and counts. Inline and thread components share the driver's memory: nothing crosses.
The pickling costs time, so the bench meters a run of its own, apart from the timed one.
"""

from __future__ import annotations

import pickle
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from ..backends.base import ARStepInput, ARStepOutput
from ..engine.executor import BatchOutcome, Executor
from ..engine.executors.handles import StateTracker


@dataclass
class Crossing:
    """One component's traffic through the driver in a metered run."""

    component: str
    role: str  # thinker | talker | vocoder
    calls: int = 0
    work_units: int = 0
    sent_bytes: int = 0  # driver -> worker: the inputs (and each state's one trip)
    received_bytes: int = 0  # worker -> driver: the outputs
    # of those, the arrays' own bytes: hidden states and input embeddings back (what a talker conditions on),
    # and the prefill payloads and per-step conditioning made from them going out
    hidden_back_bytes: int = 0
    conditioning_out_bytes: int = 0

    def per_unit(self) -> dict[str, float]:
        units = max(self.work_units, 1)
        return {"component": self.component, "work_units": self.work_units, "calls": self.calls,
                "sent_per_unit": self.sent_bytes / units, "received_per_unit": self.received_bytes / units,
                "hidden_back_per_unit": self.hidden_back_bytes / units,
                "conditioning_out_per_unit": self.conditioning_out_bytes / units,
                "bytes_per_unit": (self.sent_bytes + self.received_bytes) / units}


class MeteredExecutor(Executor):
    """Runs every call on `inner` and counts what it carries (when `crosses`: the component is remote)."""

    def __init__(self, inner: Executor, crossing: Crossing, crosses: bool):
        self.inner = inner
        self.crossing = crossing
        self.crosses = crosses
        self._as_sent = StateTracker(ship=True)  # the same handles the executor's own tracker sends

    def submit(self, kind: str, inputs: list) -> Future[BatchOutcome]:
        crossing = self.crossing
        crossing.calls += 1
        crossing.work_units += len(inputs)
        if not self.crosses:
            return self.inner.submit(kind, inputs)
        crossing.sent_bytes += _size((kind, self._as_sent.outbound(inputs)))
        crossing.conditioning_out_bytes += sum(_payload(v) for item in inputs if isinstance(item, ARStepInput)
                                      for v in (item.prefill, item.cond) if v is not None)
        future = self.inner.submit(kind, inputs)
        future.add_done_callback(self._count_outputs)
        return future

    def _count_outputs(self, future: Future[BatchOutcome]) -> None:
        if future.exception() is None:
            outcome = future.result()
            self.crossing.received_bytes += _size(outcome)
            self.crossing.hidden_back_bytes += sum(_payload(v) for o in outcome.outputs if isinstance(o, ARStepOutput)
                                               for v in (o.hidden, o.embeds) if v is not None)

    @property
    def kind(self) -> str:
        return self.inner.kind

    def view(self, component: Any) -> Any:
        return self.inner.view(component)

    def live_states(self) -> int:
        return self.inner.live_states()

    def kill(self) -> None:
        self.inner.kill()

    def close(self) -> None:
        self.inner.close()


def _size(value: Any) -> int:
    return len(pickle.dumps(value, pickle.HIGHEST_PROTOCOL))


def _payload(value: Any) -> int:
    """An array's own bytes (numpy and torch say `nbytes`), without its pickle framing."""
    nbytes = getattr(value, "nbytes", None)
    return int(nbytes) if isinstance(nbytes, int) else _size(value)


def metered(program: Any, executors: dict[str, Executor], remote: dict[str, bool]) -> tuple[dict[str, Executor],
                                                                                        list[Crossing]]:
    """Each executor wrapped; the crossings fill in as the engine calls them."""
    crossings = [Crossing(name, program.components[name].role) for name in executors]
    wrapped = {c.component: MeteredExecutor(executors[c.component], c, remote[c.component]) for c in crossings}
    return wrapped, crossings


def totals(crossings: list[Crossing]) -> dict[str, Any]:
    """All components together: bytes through the driver per WorkUnit, each way, and of them the thinker ->
    talker hand-off (the thinker's hidden states back, the talker's conditioning out)."""
    units = max(sum(c.work_units for c in crossings), 1)
    sent, received = sum(c.sent_bytes for c in crossings), sum(c.received_bytes for c in crossings)
    handoff = sum(c.hidden_back_bytes for c in crossings if c.role == "thinker") + \
        sum(c.conditioning_out_bytes for c in crossings if c.role == "talker")
    return {"driver_bytes_per_unit": (sent + received) / units, "sent_per_unit": sent / units,
            "received_per_unit": received / units, "handoff_bytes_per_unit": handoff / units,
            "by_component": [c.per_unit() for c in crossings]}
