"""The `process` hand-off: a pipe from the thinker's worker process straight to the talker's.

The thinker's worker numbers each step's (hidden, embeds) pair, sends it down the pipe (a sender thread:
the step returns without waiting for the talker's side to read) and returns `Held(number)` handles to
the driver. The talker's worker reads the pipe on a thread of its own into a table and, for a HandOff,
waits for the pairs it names (each was queued before the driver saw its handle). The driver decides
when a pair can go: `ProcessLink` watches the handles it was given and, when one dies with its request
(finished, cancelled, failed), hands its number to the talker's next call, which drops the pair.
Plain pickle on the pipe: torch's multiprocessing reductions would move a tensor to shared memory.
"""

from __future__ import annotations

import itertools
import multiprocessing
import pickle
import queue
import threading
import weakref
from collections import deque
from concurrent.futures import Future
from typing import Any

from ...backends.base import ARStepOutput
from .handles import drain
from .handoff import Held

FETCH_TIMEOUT_S = 120.0


class ProcessLink:
    """Driver side: the pipe's two ends (until both workers have them) and the pairs that can go."""

    def __init__(self):
        self.receive_end, self.send_end = multiprocessing.get_context("spawn").Pipe(duplex=False)
        self._released: deque[int] = deque()  # appended by finalizers, which may run on any thread

    def started(self) -> None:
        """Both workers hold their ends: the driver's copies go, so each side sees the other's end close."""
        self.receive_end.close()
        self.send_end.close()

    def watch(self, future: Future) -> None:
        """Track the handles of a thinker call's outputs (before anyone else sees them)."""
        future.add_done_callback(self._track)

    def _track(self, future: Future) -> None:
        if future.exception() is not None:
            return
        for output in future.result().outputs:
            if isinstance(output, ARStepOutput) and isinstance(output.hidden, Held):
                # hidden and embeds of one step live and die together, in one ARItem
                weakref.finalize(output.hidden, self._released.append, output.hidden.ref)

    def take_released(self) -> list[int]:
        return drain(self._released)


class PipeSender:
    """Thinker's worker: keeps nothing; numbers each pair and sends it to the talker's worker."""

    def __init__(self, connection):
        self._connection = connection
        self._numbers = itertools.count()
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        threading.Thread(target=self._send, name="omni-handoff-send", daemon=True).start()

    def keep(self, hidden: Any, embeds: Any) -> int:
        number = next(self._numbers)
        self._queue.put((number, hidden, embeds))
        return number

    def _send(self) -> None:
        while True:
            number, hidden, embeds = self._queue.get()
            try:
                self._connection.send_bytes(pickle.dumps((number, hidden, embeds), pickle.HIGHEST_PROTOCOL))
            except OSError:  # the talker's worker is gone: its calls fail on their own
                return


class PipeStore:
    """Talker's worker: the pairs the thinker's worker sent, until the driver says their requests ended."""

    def __init__(self, connection):
        self._connection = connection
        self._pairs: dict[int, tuple[Any, Any]] = {}
        self._gone_early: set[int] = set()  # released before they arrived (the request ended at once)
        self._closed = False
        self._ready = threading.Condition()
        threading.Thread(target=self._receive, name="omni-handoff-receive", daemon=True).start()

    def __len__(self) -> int:
        with self._ready:
            return len(self._pairs)

    def _receive(self) -> None:
        while True:
            try:
                number, hidden, embeds = pickle.loads(self._connection.recv_bytes())
            except (EOFError, OSError):
                with self._ready:
                    self._closed = True
                    self._ready.notify_all()
                return
            with self._ready:
                if number in self._gone_early:
                    self._gone_early.discard(number)
                else:
                    self._pairs[number] = (hidden, embeds)
                self._ready.notify_all()

    def release(self, numbers: list[int]) -> None:
        with self._ready:
            for number in numbers:
                if self._pairs.pop(number, None) is None:
                    self._gone_early.add(number)

    def fetch(self, numbers: list[int]) -> dict[int, tuple[Any, Any]]:
        with self._ready:
            missing = lambda: [n for n in numbers if n not in self._pairs]  # noqa: E731
            if not self._ready.wait_for(lambda: not missing() or self._closed, timeout=FETCH_TIMEOUT_S) or missing():
                raise RuntimeError(f"the thinker's hidden states for this step never reached the talker "
                                   f"({'its worker is gone' if self._closed else f'waited {FETCH_TIMEOUT_S:g} s'})")
            return {n: self._pairs[n] for n in numbers}
