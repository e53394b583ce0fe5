"""The `omni` entry point: quiet signal handling from the first instant, then the typer app (or, for
`omni --help`, `--version` and `cards list`, their answer kept from it: lean.py)."""

from __future__ import annotations

import os
import signal
import sys


def _exit_at_start_up(signum, frame) -> None:
    # Nothing has been written yet, and a KeyboardInterrupt traceback from the middle of an
    # import helps no one: end with the shell's 128 + N. A run installs its own handling later.
    os._exit(128 + signum)


def main() -> None:
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, _exit_at_start_up)
    from .lean import serve

    try:
        code = serve(sys.argv[1:])
    except Exception:  # noqa: BLE001 - the full CLI says what is wrong, in its one line
        code = None
    if code is not None:
        sys.exit(code)
    from .app import main as app_main

    app_main()
