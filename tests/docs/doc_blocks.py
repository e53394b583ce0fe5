"""The fenced code blocks of README.md and docs/, with the marker before each that says whether a test runs it.

A `sh`, `bash` or `python` block is preceded (on the line before its fence, blank lines allowed) by either

    <!-- doctest: card=NAME creates=a.wav,out/0001.wav stdout="exit 2|exit 141" serve python -->
    <!-- not-run: why a test cannot run it -->

`doctest` takes optional words: `card=` (OMNI_CARD for the block; default: none, so the default card),
`creates=` (files the block must leave, non-empty), `stdout=` (texts its stdout must contain, `|` between),
`serve` (it talks to `omni serve` on localhost:8000), `python` (a Python block). The blocks of one page run
in order in one directory, so a block may use the files an earlier one made.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RUNNABLE = {"sh", "bash", "python"}
MARKER = re.compile(r"^<!--\s*(doctest|not-run)\s*(?::\s*(.*?))?\s*-->\s*$")
FENCE = re.compile(r"^```(\S*)\s*$")


@dataclass
class Block:
    page: str  # path from the checkout's root
    line: int  # the fence's line, from 1
    lang: str
    code: str
    marker: str | None  # "doctest", "not-run" or None
    options: dict[str, str] = field(default_factory=dict)

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"

    def files(self, key: str, sep: str = ",") -> list[str]:
        return [f for f in self.options.get(key, "").split(sep) if f]


def pages() -> list[Path]:
    """README.md and every page of docs/ but the generated references (their blocks are --help output)."""
    docs = sorted(p for p in (ROOT / "docs").rglob("*.md") if "reference" not in p.relative_to(ROOT / "docs").parts)
    return [ROOT / "README.md", *docs]


def blocks(path: Path) -> list[Block]:
    lines = path.read_text().splitlines()
    found, i = [], 0
    while i < len(lines):
        fence = FENCE.match(lines[i])
        if not fence:
            i += 1
            continue
        end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
        marker, options = _marker_before(lines, i)
        found.append(Block(str(path.relative_to(ROOT)), i + 1, fence.group(1), "\n".join(lines[i + 1:end]) + "\n",
                           marker, options))
        i = end + 1
    return found


def _marker_before(lines: list[str], fence: int) -> tuple[str | None, dict[str, str]]:
    j = fence - 1
    while j >= 0 and not lines[j].strip():
        j -= 1
    found = MARKER.match(lines[j]) if j >= 0 else None
    if not found:
        return None, {}
    kind, rest = found.group(1), found.group(2) or ""
    if kind == "not-run":
        return kind, {"why": rest}
    options = {}
    for word in shlex.split(rest):
        key, _, value = word.partition("=")
        options[key] = value
    return kind, options
