"""The far side of a placed component: built from the card where it runs, it keeps its requests' states.

A process worker and a Ray actor both hold one `ComponentWorker`. It builds its component from the card:
the whole backend where the component needs it (a talker's hand-off helpers read thinker weights), its own
part where the backend can build that alone (the hf vocoder), and keeps the one component it serves.
"""

from __future__ import annotations

import dataclasses
import os
import pickle
import threading
import time
from typing import Any

from ...program.backends import settings_schema
from ...program.checks import component_params
from ...program.compiler import build_components
from ..executor import BatchOutcome, run_batch
from .handles import StateTable
from .handoff import hold_outputs, make_handoffs

# the variables the usual intra-op pools read when they start (OpenMP, OpenBLAS, MKL): set before import
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


@dataclasses.dataclass(frozen=True)
class WorkerSpec:
    """Everything a worker needs to build its component, picklable: the card, settings, which component."""

    card: Any  # CardSpec
    settings: dict[str, Any]
    component: str
    device: str | None = None
    num_threads: int = 0
    handoff: str | None = None  # "send" (the thinker's worker) or "receive" (the talker's): handoff.py
    def build_settings(self) -> dict[str, Any]:
        """The engine's backend settings, with this component's device where the backend takes one."""
        backend = self.card.components[self.component].backend
        takes_device = "device" in {f.name for f in dataclasses.fields(settings_schema(backend))}
        if self.device is None or not takes_device:
            return dict(self.settings)
        return {**self.settings, "device": self.device}


def thread_environment(num_threads: int) -> dict[str, str]:
    """The environment a worker process starts with to get `num_threads` intra-op threads (0: unchanged)."""
    return {name: str(num_threads) for name in THREAD_VARIABLES} if num_threads else {}


class ComponentWorker:
    """Runs one component's batches on the worker's side, with its requests' states kept here.

    With a direct hand-off (handoff.py) the thinker's worker has a `sender` (`keep(hidden, embeds)` -> ref)
    and the talker's a `store` (`fetch(refs)`, `release(refs)`, `len`: the pairs it holds)."""

    def __init__(self, spec: WorkerSpec, sender: Any = None, store: Any = None):
        # before the backend imports its libraries: their thread pools read these once, at start
        os.environ.update(thread_environment(spec.num_threads))
        # only its own component, where the backend can build it alone (the hf vocoder: token2wav's weights)
        components = build_components(spec.card, component_params(spec.card), spec.build_settings(),
                                      only=spec.component)
        self.name = spec.component
        self.component = components[spec.component]
        self.table = StateTable()
        self.sender, self.store = sender, store
        # a talker's hand-off joins a prompt's held parts as the thinker joins them (backend-native arrays)
        thinker = next((c for c in components.values() if c.role == "thinker"), None) if store is not None else None
        self.join_rows = None if thinker is None else thinker.join_rows

    def run(self, kind: str, inputs: list[Any], released: list[int], dropped: list[Any] = ()) -> BatchOutcome:
        self._release(released, dropped)
        try:
            resolved = self.table.inbound(inputs)
        except Exception as exc:  # a handle without its state: every request of the batch fails alone
            return BatchOutcome([exc] * len(inputs), time.perf_counter(), 0.0)
        errors = make_handoffs(self.component, resolved, self.store.fetch, self.join_rows) if self.store is not None \
            else []
        # the component's own time: the hand-off's fetching and keeping are the executor's cost, not its
        start = time.perf_counter()  # CLOCK_MONOTONIC: the same clock as the driver's on one machine
        if any(errors):  # a request whose hand-off failed fails alone; the others run
            ok = [i for i, e in enumerate(errors) if e is None]
            ran = iter(run_batch(self.component, kind, [resolved[i] for i in ok]) if ok else [])
            outputs = [e if e is not None else next(ran) for e in errors]
        else:
            outputs = run_batch(self.component, kind, resolved)
        dur = time.perf_counter() - start
        if self.sender is not None:
            outputs = hold_outputs(outputs, self.sender.keep)
        return BatchOutcome([portable(o) for o in outputs], start, dur)

    def live_states(self, released: list[int], dropped: list[Any] = ()) -> int:
        """How many requests' states this component holds (after freeing `released`), the thinker states
        it holds for the hand-off included."""
        self._release(released, dropped)
        return len(self.table) + (len(self.store) if self.store is not None else 0)

    def _release(self, released: list[int], dropped: list[Any]) -> None:
        self.table.release(released)
        if self.store is not None and dropped:
            self.store.release(list(dropped))


def exit_with_parent(parent: int, every_s: float = 0.5) -> None:
    """In a worker process: exit when `parent` (the pid that started it, taken there) is gone (killed
    with SIGKILL, say). A pool's idle worker waits on its call queue, and a killed parent does not close
    that queue, so without this it would wait forever as an orphan. Polls: an orphan's parent pid changes.
    The pid comes from the parent: one read here could already be the orphan's new parent.
    """

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(every_s)
        os._exit(1)

    threading.Thread(target=watch, name="omni-parent-watch", daemon=True).start()


def portable(output: Any) -> Any:
    """An output that crosses back to the driver; an exception that cannot be pickled becomes its text."""
    if not isinstance(output, BaseException):
        return output
    try:
        pickle.dumps(output)
    except Exception:
        return RuntimeError(f"{type(output).__name__}: {output}")
    return output
