"""Load time, ours against `generate`'s, each a fresh load of the weights in the `omni bench --reference` process.

Both loads come after the caller's own (`omni bench` compiles the card before it runs anything), so
both find torch and transformers imported and the checkpoint's files in the OS file cache: neither
pays the import or the disk. `generate`'s load goes first and is released (and glibc asked to return
the memory) before ours, so at most two copies of the weights are resident at once, as before; with
more rounds the pairs alternate and each side's fastest load counts.
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


def timed_loads(program: CompiledProgram, model_path: str, build: Callable[[Callable[[LoadStep], None]], CompiledProgram],
                rounds: int = 1) -> tuple[CompiledProgram, dict[str, Any]]:
    """`rounds` alternated pairs, generate's load then ours, each side's fastest kept (one load on a shared
    machine moves by seconds); every load but the last of ours is released before the next one. Returns that last program and,
    per side, the fastest seconds ("s"), every load's ("runs_s") and the tensors read, with the order."""
    runs: dict[str, list[dict[str, Any]]] = {"generate": [], "ours": []}
    ours = None
    for _ in range(rounds):
        if ours is not None:  # released before generate's next load: two copies of the weights at most
            ours = None
            _return_freed_memory()
        runs["generate"].append(generate_load(program, model_path))
        ours, figures = our_load(build)
        runs["ours"].append(figures)
    assert ours is not None, "rounds must be at least 1"
    loads: dict[str, Any] = {side: {"s": min(r["s"] for r in done), "runs_s": [r["s"] for r in done],
                                    "tensors": min(r["tensors"] for r in done)} for side, done in runs.items()}
    return ours, {**loads, "order": ["generate", "ours"] * rounds}


def load_line(load: dict[str, Any]) -> str:
    """One line of at most 80 columns: both load times (3 figures), the tensors each read, and their ratio."""
    ours, ref = load["ours"], load["generate"]
    rounds = len(ours.get("runs_s", [0]))
    return (f"load{'' if rounds == 1 else f', best of {rounds}'}: ours {ours['s']:.3g} s ({ours['tensors']} tensors), "
            f"generate {ref['s']:.3g} s ({ref['tensors']}), ratio {ours['s'] / ref['s']:.2f}x")
