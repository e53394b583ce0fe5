"""onnxruntime sessions for the two halves of the voice's graph (imported only by this backend)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def _options(num_threads: int, optimized: bool = False):
    import onnxruntime as ort  # lazy, as every import of this backend

    options = ort.SessionOptions()
    options.intra_op_num_threads = num_threads or default_threads()
    options.log_severity_level = 3  # its warnings about unused initializers are ours to know, not the user's
    # between runs its threads sleep rather than spin: a spinning thread holds a core that the engine's own
    # thread (the text front end, the writer) is waiting for
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    if optimized:  # as `optimized()` kept it: not optimized again at each start
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return options


def default_threads() -> int:
    """Threads per session when the card leaves the count open (0): the cores this process may use, as one
    session of the whole voice would take. The decoder does most of the work, so it gets them all; the acoustic
    model, on its own thread, shares them only while it makes the next sentence's frames."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return max(1, cores)


def session(model: bytes, num_threads: int, optimized: bool = False):
    """A CPU session on a serialized ONNX graph (which it does not keep: the caller's bytes can go);
    `optimized`: the graph is one `optimized()` made."""
    import onnxruntime as ort

    made = ort.InferenceSession(model, _options(num_threads, optimized), providers=["CPUExecutionProvider"])
    # onnxruntime's Python wrapper holds on to the bytes only to remake the session if its providers are
    # changed, which we never do; the voice's graph would otherwise stay in memory twice
    if getattr(made, "_model_bytes", None) is model:
        made._model_bytes = None
    return made


def optimized(model: bytes) -> bytes:
    """The graph as onnxruntime's CPU provider rewrites it before running (constants folded, nodes fused), so a
    session made on it later (`session(..., optimized=True)`) starts without redoing that work. Its layout
    rewrites, which depend on the machine, are not kept, and not made by those sessions either."""
    import onnxruntime as ort

    options = _options(1)
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    with tempfile.TemporaryDirectory(prefix="omni-ort-") as folder:
        options.optimized_model_filepath = str(Path(folder) / "optimized.onnx")
        ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
        return Path(options.optimized_model_filepath).read_bytes()


def runtime_version() -> str:
    import onnxruntime as ort

    return ort.__version__
