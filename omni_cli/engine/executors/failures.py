"""A worker that dies takes its call with it: the future fails with one line naming the component."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from typing import Any


class WorkerDied(RuntimeError):
    """The process or Ray actor running a component is gone; every call to it fails from now on."""


def translated(inner: Future, describe: Callable[[BaseException], str | None]) -> Future:
    """A future with `inner`'s result; an exception that `describe` recognises becomes WorkerDied(text)."""
    outer: Future = Future()

    def done(f: Future) -> None:
        exc = f.exception()
        if exc is None:
            outer.set_result(f.result())
            return
        text = describe(exc)
        outer.set_exception(WorkerDied(text) if text else exc)

    inner.add_done_callback(done)
    return outer


def first_line(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return lines[0] if lines else type(exc).__name__


def cancelled_future(error: BaseException) -> Future[Any]:
    f: Future = Future()
    f.set_exception(error)
    return f
