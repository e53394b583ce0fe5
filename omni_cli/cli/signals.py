"""SIGINT / SIGTERM: cancel every request at the next step boundary, keep what was written, exit 130 / 143."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable

from .errors import SIGINT_EXIT, SIGTERM_EXIT

EXIT_CODES = {signal.SIGINT: SIGINT_EXIT, signal.SIGTERM: SIGTERM_EXIT}


class GracefulStop:
    """While active, the first SIGINT/SIGTERM calls `on_stop(signum)` (it must only set flags); a second one exits at once.

    Exiting at once loses nothing: WAV headers are current after every chunk and trace lines are flushed.
    """

    def __init__(self, on_stop: Callable[[int], None]):
        self._on_stop = on_stop
        self.signum: int | None = None
        self._previous: dict[int, object] = {}

    @property
    def exit_code(self) -> int | None:
        return None if self.signum is None else EXIT_CODES[self.signum]

    def bind(self, on_stop: Callable[[int], None]) -> None:
        """Call `on_stop` from now on; a signal that came before (while the outputs opened) is passed on now."""
        self._on_stop = on_stop
        if self.signum is not None:
            on_stop(self.signum)

    def _handle(self, signum, frame) -> None:
        if self.signum is not None:
            os._exit(EXIT_CODES[signum])
        self.signum = signum
        self._on_stop(signum)

    def __enter__(self) -> GracefulStop:
        if threading.current_thread() is threading.main_thread():
            for signum in EXIT_CODES:
                self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def __exit__(self, *exc) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        self._previous.clear()
