"""Columns that fit the terminal: the last column wraps under itself; rows too wide for that become blocks."""

from __future__ import annotations

import os
import sys
import textwrap
from collections.abc import Callable
from typing import TextIO

GAP = "  "
MIN_LAST = 24  # narrower than this, a wrapped last column reads worse than a block per row


def terminal_width(stream: TextIO | None = None) -> int | None:
    """The width to fit on `stream` (stdout by default): COLUMNS, else the stream's terminal's, or None for a
    pipe or file (one line per row)."""
    stream = sys.stdout if stream is None else stream
    if "COLUMNS" in os.environ:
        return _shutil_width()
    if not stream.isatty():
        return None
    try:  # (shutil asks stdout's terminal, which may be a pipe while this stream is a terminal)
        return max(os.get_terminal_size(stream.fileno()).columns, 20)
    except (OSError, ValueError):
        return _shutil_width()


def _shutil_width() -> int:
    import shutil  # here, not at the top: shutil imports more than `omni cards list` may spend

    return max(shutil.get_terminal_size().columns, 20)


def as_block(row: tuple[str, ...]) -> list[str]:
    """A row as a block: its first cell, then the rest on one line."""
    return [row[0], GAP.join(cell for cell in row[1:] if cell)]


def fit_columns(rows: list[tuple[str, ...]], width: int | None, indent: str = "",
                block: Callable[[tuple[str, ...]], list[str]] = as_block) -> list[str]:
    """Aligned columns, each row's last cell unpadded, one line per row without a width.

    With a width, the last cell wraps onto lines indented to its column. When the other columns alone
    leave it less than MIN_LAST and some row does not fit, every row becomes a block (`block(row)`:
    a heading line, then lines wrapped beneath it, indented four), so a table is never half one
    layout and half the other.
    """
    if not rows:
        return []
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    lead = len(indent) + sum(widths) + len(GAP) * len(widths)
    fits = width is None or all(lead + len(row[-1]) <= width for row in rows)
    if not fits and width - lead < MIN_LAST:
        return [line for row in rows for line in _block(block(row), width, indent)]
    lines: list[str] = []
    for row in rows:
        head = indent + GAP.join(c.ljust(w) for c, w in zip(row, widths, strict=False))
        wrapped = [row[-1]] if fits else (textwrap.wrap(row[-1], width - lead) or [""])
        lines.append((head + GAP + wrapped[0]).rstrip())
        lines.extend(" " * lead + more for more in wrapped[1:])
    return lines


def _block(parts: list[str], width: int, indent: str) -> list[str]:
    inner = indent + "    "
    lines = textwrap.wrap(parts[0], width - len(indent), initial_indent=indent, subsequent_indent=inner)
    for part in parts[1:]:
        lines.extend(textwrap.wrap(part, width - len(inner), initial_indent=inner, subsequent_indent=inner))
    return lines


def column_groups(widths: list[int], width: int | None) -> list[list[int]]:
    """A wide table's columns split into tables that fit, each led by the first column: indices of the
    other columns per table, in order. `widths`: each column's text width (header or widest cell).
    A boxed table spends 3 characters per column (a border and a space each side) and 1 to close it,
    so without a width, or where the whole table fits, it stays one table."""
    lead = widths[0] + 3 + 1
    groups: list[list[int]] = [[]]
    used = lead
    for i in range(1, len(widths)):
        if width is not None and groups[-1] and used + widths[i] + 3 > width:
            groups.append([])
            used = lead
        groups[-1].append(i)
        used += widths[i] + 3
    return groups


def labelled_line(text: str, width: int | None) -> str:
    """A "label: a, b, c" line that fits `width`: wrapped at its spaces, each further line under the text after
    the label (a narrow width: four spaces in); one line without a width (a pipe or file)."""
    if width is None or len(text) <= width:
        return text
    label = text.index(": ") + 2 if ": " in text else 0
    indent = " " * (label if width - label >= MIN_LAST else 4)
    return textwrap.fill(text, width, subsequent_indent=indent, break_long_words=False, break_on_hyphens=False)
