"""What reaches a terminal: text from files made inert, and a rich console that reports a closed stdout.

A card description or a trace's loop name is data, not markup and not terminal control: a name like
`[/oops]` would crash rich's markup parser, `[link=…]` would be interpreted, and an escape sequence in
a description could set the terminal's title or colours. Every string that came from a file goes
through `inert()` (control characters shown as `\\x1b`-style escapes) and, on its way into rich, is a
`Text` (never parsed as markup).
"""

from __future__ import annotations

import unicodedata
from typing import Any

# Cc: C0/C1 controls (ESC, BEL, CSI…); Cs: lone surrogates, which cannot be encoded for a terminal.
# Bidi overrides (Cf, U+202A–U+202E, U+2066–U+2069) can reorder what a terminal shows; other format
# characters (the zero-width joiner inside emoji) are left alone.
_BIDI = {chr(c) for c in (*range(0x202A, 0x202F), *range(0x2066, 0x206A))}


def inert(value: Any) -> str:
    """`value` as text a terminal shows literally: control and bidi characters as visible escapes."""
    text = str(value)
    if text.isprintable():
        return text
    return "".join(_escape(ch) if unicodedata.category(ch) in ("Cc", "Cs") or ch in _BIDI else ch for ch in text)


def _escape(ch: str) -> str:
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def text(value: Any, style: str = ""):
    """A rich `Text` of `value` made inert: shown as it is, never parsed as markup."""
    from rich.text import Text

    return Text(inert(value), style=style)


def stdout_console():
    """A rich console on stdout whose closed pipe raises BrokenPipeError (rich's own exits 1)."""
    from rich.console import Console

    class _Console(Console):
        def on_broken_pipe(self) -> None:
            self.quiet = True
            raise BrokenPipeError("stdout closed")

    return _Console(highlight=False)
