"""The `omni` entry point: quiet signal handling from the first instant, then the typer app."""

from __future__ import annotations

import os
import signal


def _exit_at_start_up(signum, frame) -> None:
    # Nothing has been written yet, and a KeyboardInterrupt traceback from the middle of an
    # import helps no one: end with the shell's 128 + N. A run installs its own handling later.
    os._exit(128 + signum)


def main() -> None:
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, _exit_at_start_up)
    from .app import main as app_main

    app_main()
