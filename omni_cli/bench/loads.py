"""Load time, ours against `generate`'s, each a fresh load of the weights in the `omni bench --reference` process.

Both loads come after the caller's own (`omni bench` compiles the card before it runs anything), so
both find torch and transformers imported and the checkpoint's files in the OS file cache: neither
pays the import or the disk. `generate`'s load goes first and is released (and glibc asked to return
the memory) before ours, so at most two copies of the weights are resident at once, as before.
"""

from __future__ import annotations

import ctypes
import gc
import time
from collections.abc import Callable
from typing import Any

from ..backends.base import LoadStep
from ..engine import Engine
from ..program import CompiledProgram


class TensorCount:
    """A load reporter that keeps how many weight tensors the load read (0: it read none)."""

    def __init__(self) -> None:
        self.tensors = 0

    def __call__(self, step: LoadStep) -> None:
        if step.phase == "loading weights" and step.done is not None and step.done == step.total:
            self.tensors += step.done


def _return_freed_memory() -> None:
    """Drop what is unreachable and ask glibc to give freed pages back: the next load pays its own."""
    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc: its allocator keeps what it keeps
        pass


def generate_load(program: CompiledProgram, model_path: str) -> dict[str, Any]:
    """Time what a `generate` user loads (backends/hf/reference.load_reference) from `model_path`, in the
    dtype and on the device `program`'s thinker runs with; then release it."""
    from ..backends.hf.reference import load_reference

    model = program.roles["thinker"].model
    count = TensorCount()
    start = time.perf_counter()
    loaded = load_reference(model_path, model.thinker.dtype, model.device, count)
    seconds = time.perf_counter() - start
    del loaded
    _return_freed_memory()
    return {"s": seconds, "tensors": count.tensors}


def our_load(build: Callable[[Callable[[LoadStep], None]], CompiledProgram]) -> tuple[CompiledProgram, dict[str, Any]]:
    """Time `build(on_load)` (a card compile: the weights, tokenizer, voices, the components' set-up) and an
    engine made on it, what `omni speak` does before its first request; the program and the figures."""
    count = TensorCount()
    start = time.perf_counter()
    program = build(count)
    Engine(program).close()  # the engine run_workload makes is the same, and as quick to make
    seconds = time.perf_counter() - start
    return program, {"s": seconds, "tensors": count.tensors}


def load_line(load: dict[str, Any]) -> str:
    """One line of at most 80 columns: both load times, the tensors each read, and their ratio."""
    ours, ref = load["ours"], load["generate"]
    return (f"load: ours {ours['s']:.2f} s ({ours['tensors']} tensors), generate {ref['s']:.2f} s "
            f"({ref['tensors']}), ratio {ours['s'] / ref['s']:.2f}x")
