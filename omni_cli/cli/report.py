"""Printing errors: one `omni: error:` line each, on stderr."""

from __future__ import annotations

import sys

import typer

from .errors import PREFIX, one_line
from .term import inert


def error_line(message: str) -> None:
    try:
        sys.stderr.write(PREFIX + inert(one_line(message)) + "\n")  # messages quote files: escape their text
        sys.stderr.flush()
    except (OSError, ValueError):
        pass  # stderr is gone too: the exit status still tells


def exit_with(outcome) -> None:
    for message in outcome.errors:
        error_line(message)
    if outcome.code:
        raise typer.Exit(outcome.code)
