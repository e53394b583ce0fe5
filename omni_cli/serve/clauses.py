"""Text that arrives piece by piece (an LLM's tokens), cut into sentences or clauses as soon as each is complete."""

from __future__ import annotations

import re

# a boundary is the punctuation and the whitespace after it: "3." followed by "5" is not one, and a
# delta ending in "." waits for the next piece (or the end) to tell
_SENTENCE = re.compile(r"[.!?…]+[\"')\]]*\s+|[。！？]+")
_CLAUSE = re.compile(r"[.!?…,;:]+[\"')\]]*\s+|\s[-–—]+\s|[。！？，、；：]+")
GRANULARITIES = ("sentence", "clause", "none")  # none: the whole text at the end, as one piece


class ClauseSplitter:
    """`add(text)` returns the sentences (or clauses) that text completed; `flush()` the rest at the end.
    With granularity none nothing is complete before the end (vllm-omni's default: one request per flush).

    A piece is never longer than `max_chars`: a run without a boundary that grows past it is cut at its
    last space (or at `max_chars` when it has none), so each piece is a request the card accepts.
    """

    def __init__(self, granularity: str = "sentence", max_chars: int = 2000) -> None:
        if granularity not in GRANULARITIES:
            raise ValueError(f"unknown split_granularity {granularity!r} (supported: {', '.join(GRANULARITIES)})")
        self._boundary = {"clause": _CLAUSE, "sentence": _SENTENCE}.get(granularity)
        self.max_chars = max_chars
        self._buffer = ""

    def add(self, text: str) -> list[str]:
        self._buffer += text
        pieces = []
        while self._boundary is not None:
            match = self._boundary.search(self._buffer)
            if match is None or match.end() > self.max_chars:
                break
            pieces.append(self._buffer[:match.end()])
            self._buffer = self._buffer[match.end():]
        while len(self._buffer) > self.max_chars:
            cut = self._buffer.rfind(" ", 0, self.max_chars) + 1 or self.max_chars
            pieces.append(self._buffer[:cut])
            self._buffer = self._buffer[cut:]
        return [p.strip() for p in pieces if p.strip()]

    def flush(self) -> list[str]:
        rest, self._buffer = self._buffer.strip(), ""
        return [rest] if rest else []
