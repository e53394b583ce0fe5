"""A batched vocoder call's rows split over Python threads: a second core for the vocoder without an OpenMP team.

At concurrency 8 the vocoder is most of the work, and inline it runs alone: the engine's thread waits on it.
Two intra-op threads would use both cores, but an OpenMP team waits at every barrier for a core someone
else holds (threads.py). Rows
split over Python threads need no barrier: each thread runs its own rows through the same call with the
component's intra-op count, and a busy core slows the thread on it, not the other. torch releases the GIL
inside each operation, so the threads overlap as far as the operations are long: a 4-row half of a batch of
eight 264-frame DiT windows or 64-frame BigVGAN calls, not one request's 64 frames (its operations are too
short, and the threads take turns at the GIL). The split pays from `MIN_ROW_FRAMES` frames a thread, by
measurement (`examples/hf_row_threads.py`; docs/performance.md).

A row's values depend on the batch it runs in only by rounding (a matrix product of other height), as in
any batch: within the card's `sample_tolerance`, and a request alone never splits.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

import torch

from omni_cli.backends.hf.threads import intra_op_threads

T = TypeVar("T")

# frames (rows x frames per row) each thread must get for a split to pay, per stage; measured on the tiny
# checkpoint with examples/hf_row_threads.py (the DiT's per-operation work is smaller: it needs more rows)
MIN_ROW_FRAMES = {"dit": 384, "bigvgan": 192}


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity where the platform says; else all of them)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


def choose_row_threads(row_threads: int, intra: int, cores: int | None = None, on_cpu: bool = True) -> int:
    """A component's row threads: its `row_threads` param, or (0) as many as its intra-op threads leave cores
    for, at least one; on a GPU (0) one: its kernels queue on one stream, and nothing here measured a split."""
    if row_threads or not on_cpu:
        return row_threads or 1
    return max(1, (usable_cores() if cores is None else cores) // max(1, intra))


class RowThreads:
    """Up to `count` threads for one batched call's rows: the caller's thread runs the first part, a pool of
    `count - 1` the rest, each part with `intra` intra-op threads and without autograd."""

    def __init__(self, count: int, intra: int):
        self.count, self.intra = count, intra
        self._pool = ThreadPoolExecutor(count - 1, thread_name_prefix="vocoder-rows") if count > 1 else None

    def parts(self, stage: str, rows: int, frames: int) -> list[tuple[int, int]]:
        """Row ranges [start, stop) for a call of `rows` rows of `frames` frames: as many (up to `count`) as
        leave each at least MIN_ROW_FRAMES[stage] frames, the rows shared out evenly."""
        n = max(1, min(self.count, rows, rows * frames // MIN_ROW_FRAMES[stage]))
        bounds = [rows * i // n for i in range(n + 1)]
        return list(zip(bounds[:-1], bounds[1:], strict=True))

    def map(self, call: Callable[[int, int], T], parts: list[tuple[int, int]]) -> list[T]:
        """`call(start, stop)` for each part, concurrently; the results in the parts' order. Every part has
        finished when this returns or raises (the first error raised, once the others are done)."""
        if len(parts) == 1 or self._pool is None:
            return [call(start, stop) for start, stop in parts]
        futures: list[Future[T]] = [self._pool.submit(self._run, call, start, stop) for start, stop in parts[1:]]
        try:
            first = call(*parts[0])
        finally:
            for future in futures:
                future.exception()  # waits; a part never outlives the call
        return [first, *(future.result() for future in futures)]

    def _run(self, call: Callable[[int, int], T], start: int, stop: int) -> T:
        # autograd's mode is per thread in torch; the count is set as the component's calls set it
        with torch.no_grad(), intra_op_threads(self.intra):
            return call(start, stop)
