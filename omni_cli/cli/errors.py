"""Exit codes, and how any exception becomes one `omni: error:` line and a code."""

from __future__ import annotations

OK = 0
FAILURE = 1  # the run went wrong: a request failed, a file could not be written
USAGE = 2  # the user's input is wrong: options, text, cards, programs
PIPE_CLOSED = 141  # 128 + SIGPIPE, as coreutils report `yes | head`
SIGINT_EXIT = 130
SIGTERM_EXIT = 143

PREFIX = "omni: error: "


class CliError(Exception):
    """An error the CLI reports as one line with its exit code."""

    def __init__(self, message: str, code: int = USAGE):
        super().__init__(message)
        self.code = code


def one_line(text: str) -> str:
    return " ".join(str(text).split())


def is_internal(exc: BaseException) -> bool:
    """Not one of the errors omni reports by design: --debug shows its traceback."""
    from ..audio import AudioOutputError
    from ..engine import AdmissionError
    from ..engine.executors import WorkerDied
    from ..spec import SpecError

    return not isinstance(exc, (CliError, SpecError, AudioOutputError, AdmissionError, WorkerDied, OSError, MemoryError,
                                ImportError))


def classify(exc: BaseException) -> tuple[int, str]:
    """(exit code, message) for an exception that ended a command."""
    # imported here: the spec and audio layers pull in yaml and numpy, which `omni --help` never needs
    from ..audio import AudioOutputError
    from ..backends.base import BackendUnavailable
    from ..engine import AdmissionError
    from ..engine.executors import WorkerDied
    from ..spec import SpecError

    if isinstance(exc, CliError):
        return exc.code, one_line(exc)
    if isinstance(exc, SpecError):
        more = " (see `omni cards validate`)" if len(exc.issues) > 1 else ""
        return USAGE, one_line(exc) + more
    if isinstance(exc, (AudioOutputError, AdmissionError, BackendUnavailable, WorkerDied)):
        return FAILURE, one_line(exc)
    if isinstance(exc, OSError):
        where = f"{exc.filename}: " if exc.filename else ""
        return FAILURE, one_line(f"{where}{exc.strerror or exc}")
    if isinstance(exc, MemoryError):
        return FAILURE, "out of memory"
    if isinstance(exc, ImportError):  # an optional backend without its extra
        from ..extras import install_command

        return FAILURE, one_line(f"{exc} (the hf backend needs its extra: {install_command('hf')})")
    name = type(exc).__name__
    return FAILURE, one_line(f"internal error: {name}: {exc} (run with --debug for the traceback)")
