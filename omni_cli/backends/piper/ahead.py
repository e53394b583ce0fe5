"""The voice's two onnxruntime sessions, made on a thread of their own while the rest of start-up runs.

Making a session is onnxruntime's C++ work (reading the graph, planning its memory), done without the GIL, so on
a thread it runs beside the Python that start-up runs anyway: gruut's import and lexicon in `build`, and, when
the command line starts it as soon as it knows the card (`start`), its own parsing and imports too. `take` gives
the build the sessions made with the thread count it asks for, starting them there when nothing started them.
"""

from __future__ import annotations

import threading
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from .stream_state import StreamSpec

_pending: dict[int, Future] = {}  # by onnxruntime thread count
_lock = threading.Lock()


@dataclass(frozen=True)
class VoiceSessions:
    """The sessions on the voice's split graphs, and what the components need to know of those graphs."""

    acoustic: Any
    decoder: Any
    sizes: tuple[int, int]  # bytes of each part's graph
    channels: int
    samples_per_frame: int
    stream: StreamSpec
    note: str | None  # one line when the graph cache could not be used
    num_threads: int


def start(num_threads: int = 0) -> Future:
    """Begin making the sessions with `num_threads` onnxruntime threads each (0: one per core each), unless begun.

    Not a daemon thread: an interpreter that exits waits for onnxruntime to finish rather than stopping it."""
    with _lock:
        if num_threads not in _pending:
            _pending[num_threads] = _begin(num_threads)
        return _pending[num_threads]


def take(num_threads: int) -> Future:
    """The sessions for `num_threads` (begun now if nothing began them), for one build; others begun are let go."""
    with _lock:
        future = _pending.pop(num_threads, None)
        _pending.clear()
    return future if future is not None else _begin(num_threads)


def unclaimed(future: Future) -> bool:
    """Whether `future` is still being made and no build has taken it."""
    with _lock:
        return not future.done() and future in _pending.values()


def _begin(num_threads: int) -> Future:
    future: Future = Future()
    threading.Thread(target=_make, args=(future, num_threads), name="omni-voice-sessions").start()
    return future


def _make(future: Future, num_threads: int) -> None:
    if not future.set_running_or_notify_cancel():
        return
    try:
        future.set_result(make_sessions(num_threads))
    except BaseException as exc:  # noqa: BLE001 - raised where the build waits for them
        future.set_exception(exc)


def make_sessions(num_threads: int) -> VoiceSessions:
    """Read (or build) the voice's split graphs and make a session on each; each graph's bytes go once its
    session is made. Raises ImportError when onnxruntime, the voice or (for a cold cache) onnx is missing."""
    import onnxruntime  # noqa: F401 - a missing one is named before the voice is read

    from .graph_cache import split_graphs
    from .sessions import session
    from .voice import find_voice

    parts = split_graphs(find_voice().model_path)
    graphs = [parts.acoustic, parts.decoder]
    facts = {"channels": parts.channels, "samples_per_frame": parts.samples_per_frame, "stream": parts.stream,
             "note": parts.note, "sizes": (len(graphs[0]), len(graphs[1]))}
    optimized = parts.optimized
    del parts
    made = []
    while graphs:
        made.append(session(graphs.pop(0), num_threads, optimized))
    return VoiceSessions(*made, **facts, num_threads=num_threads)
