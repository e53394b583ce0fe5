"""The `omni` entry point: quiet signal handling from the first instant, then the typer app (or, for
`omni --help`, `--version` and `cards list`, their answer kept from it: lean.py). `omni speak` on the default
voice begins that voice's sessions here, on their own thread, before typer is even imported."""

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
    begun = None
    if speaks_default_voice(sys.argv[1:], os.environ):
        from ..backends.piper import ahead

        begun = ahead.start()  # the build takes them if its thread count is the same (backends/piper/ahead.py)
    from .app import main as app_main

    try:
        app_main()
    except SystemExit as done:
        if begun is not None and ahead.unclaimed(begun):
            _exit_now(done.code)  # a run that ended before its build (bad usage, a refused output)
        raise


def _exit_now(code) -> None:
    """Exit with `code` as SystemExit would, without waiting for the voice's sessions no build took: their
    thread is inside onnxruntime, which cannot be stopped part-way, and nothing else of the run is left open."""
    if code is not None and not isinstance(code, int):
        sys.stderr.write(f"{code}\n")
        code = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass  # a reader that left: the status still says how the run ended
    os._exit(code or 0)


def speaks_default_voice(argv: list[str], environ) -> bool:
    """Whether `argv` is an `omni speak` that builds the default card in this process (no --server, no help).
    Only a guess made ahead of typer's parse: a wrong yes costs the sessions' work, never a wrong voice."""
    from ..defaults import CARD_ENV, DEFAULT_CARD

    if argv[:1] != ["speak"] or environ.get("OMNI_SERVER"):
        return False
    args = argv[1:argv.index("--")] if "--" in argv else argv[1:]
    card = environ.get(CARD_ENV) or DEFAULT_CARD
    for i, arg in enumerate(args):
        name, eq, value = arg.partition("=")
        if name in ("-h", "--help", "--server"):
            return False
        if name in ("-c", "--card"):
            card = value if eq else (args[i + 1] if i + 1 < len(args) else "")
        elif arg.startswith("-c") or (arg[:1] == "-" and arg[1:2] != "-" and "c" in arg[2:]):
            return False  # a card given as -cNAME or in a cluster of short flags: not read here
    return card == DEFAULT_CARD
