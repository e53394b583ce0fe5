"""How a run or an utterance ended, in a few words: summaries that say what happened.

A run that stops early says why in its summary (`omni: stopped: disk full`) and in each `--json`
record it cut off (status `stopped`, reason); a request that finished without a sample says so
(status `no_audio`, reason naming how each stage ended) instead of passing for a short success.
"""

from __future__ import annotations

import errno
import signal
from typing import Any

SIGNAL_REASONS = {signal.SIGINT: "interrupted", signal.SIGTERM: "terminated"}
FULL_REASONS = {code: reason for code, reason in ((errno.ENOSPC, "disk full"), (getattr(errno, "EDQUOT", None),
                "disk quota exceeded"), (errno.EFBIG, "file too large")) if code is not None}
STDOUT_CLOSED = "stdout closed"


def failure_reason(exc: BaseException) -> str:
    """Why a failure stopped the run: `disk full` when a full disk is anywhere in its chain of causes
    (an audio write, or the trace's, which the CLI re-raises as its own error)."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if isinstance(cause, OSError) and cause.errno in FULL_REASONS:
            return FULL_REASONS[cause.errno]
        cause = cause.__cause__ or cause.__context__
    return "output failed" if isinstance(exc, OSError) else "error"


def closed_reason(exc: BaseException, audio_on_stdout: bool) -> str:
    """The reader of an output went away: stdout (audio or text), or a FIFO named with -o."""
    from ..audio.errors import OutputClosed  # (imported when a run ends this way, not at start-up)

    if not isinstance(exc, OutputClosed) or audio_on_stdout:  # a BrokenPipeError: stdout's reader went away
        return STDOUT_CLOSED
    return f"the reader of {exc.target} closed it"


def no_audio_reason(metrics: dict[str, Any]) -> str:
    """A request that ended normally with no sample: how each stage ended, and after how many WorkUnits.

    (The hf tiny checkpoint's random talker can draw its end code first: `talker_decode eos after
    1 WorkUnit` is a prefill that drew it.)"""
    units = metrics.get("work_units", {})
    stops = metrics.get("stop_reasons", {})
    parts = [f"{loop} {why} after {units.get(loop, 0)} WorkUnit{'' if units.get(loop, 0) == 1 else 's'}"
             for loop, why in stops.items()]
    return "the request ended without a sample" + (f" ({'; '.join(parts)})" if parts else "")
