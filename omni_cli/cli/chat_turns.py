"""`omni chat --history FILE`: the earlier turns read before the model loads, the new ones appended after."""

from __future__ import annotations

import os

from .errors import FAILURE, CliError


def earlier_turns(history: str | None) -> tuple[list, tuple]:
    """(the file's turns, the request's history made from them); a bad file is one line, exit 2."""
    from ..conversation import HistoryError, check_writable, heard_again, read_history

    if history is None:
        return [], ()
    try:
        check_writable(history)
        turns = read_history(history)
        return turns, heard_again(turns, history)
    except HistoryError as exc:
        raise CliError(f"--history {exc}") from None


def kept_encodings(history: str | None):
    """With --history, the store where whole clips' and pictures' encodings are kept across runs (a later run
    of the conversation does not encode its earlier turns again); without, None."""
    from ..encoded import EncodedStore

    return EncodedStore() if history is not None else None


def say_reuse(utterances: list, quiet: bool) -> None:
    """On stderr: what the run took from the store instead of encoding (`omni: reused 1 encoded clip (6.0 s of
    audio) from the cache`), and any entry it refused, one line each."""
    import sys

    from ..encoded import describe_reuse

    for utt in utterances:
        lines = [*utt.metrics.get("notes", ())] + [describe_reuse(utt.metrics.get("reused") or {})]
        for line in lines:
            if line and not quiet:
                sys.stderr.write(f"omni: {line}\n")


def record_turn(history: str, number: int, text: str, audio: str | None, images: list[str], source, utt, plan,
                outcome) -> None:
    """Append the user's turn and the reply once the run ended well; a failure to write is the run's failure
    (exit 1), and leaves the file as it was."""
    from ..conversation import Turn, append_turns, keep_heard

    heard: list[str] = []
    kept = None
    try:
        if audio == "-":
            kept = keep_heard(source, history, number + 1)
            heard.append(kept)
        elif audio is not None:
            heard.append(os.path.abspath(audio))
        seen = tuple(os.path.abspath(p) for p in images)
        append_turns(history, [Turn("user", text, tuple(heard), seen), reply_turn(utt, plan)])
    except OSError as exc:
        if kept is not None:
            os.unlink(kept)
        outcome.code = FAILURE
        outcome.errors.append(f"--history {history}: cannot append the turn: {exc.strerror or exc}")


def reply_turn(utt, plan):
    """The assistant's turn: its text, and its audio file where -o named a file (not a pipe, a device, stdout)."""
    from ..conversation import Turn

    path = utt.path if plan.kind in ("file", "dir") and utt.path and os.path.isfile(utt.path) else None
    return Turn("assistant", "".join(utt.reply), (os.path.abspath(path),) if path else ())
