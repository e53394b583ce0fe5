"""Rollout prompts: one text per line, or a JSON object per line with per-prompt request fields."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, fields
from typing import BinaryIO

from ..spec import SpeakRequest


@dataclass(frozen=True)
class Prompt:
    """One prompt and the request fields it sets for each of its samples (None: the run's or the card's)."""

    text: str
    mode: str | None = None
    voice: str | None = None
    max_tokens: int | None = None
    handoff: str | None = None
    seed: int | None = None  # its samples use seed, seed + 1, …; None: numbered from the run's --seed

    def request(self, seed: int, **defaults) -> SpeakRequest:
        given = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in ("text", "seed")}
        merged = {k: v if v is not None else defaults.get(k) for k, v in given.items()}
        return SpeakRequest(self.text, seed=seed, profile="rollout", **merged)


_KINDS = {"text": str, "mode": str, "voice": str, "max_tokens": int, "handoff": str, "seed": int}


MAX_LINE_BYTES = 1 << 16  # a prompt is one line: a longer one is a mistake (or an endless source), not a prompt


class PromptError(ValueError):
    """A prompts file's line that is not a prompt; the message names the file and the line."""


def read_lines(stream: BinaryIO, source: str = "<prompts>") -> Iterator[str]:
    """The lines of a binary stream as they arrive (a pipe that never ends included), each read whole only up
    to MAX_LINE_BYTES: PromptError for a longer line, or one that is not UTF-8."""
    for number in itertools.count(1):
        raw = stream.readline(MAX_LINE_BYTES + 1)
        if not raw:
            return
        if len(raw) > MAX_LINE_BYTES:
            raise PromptError(f"{source}:{number}: a line of more than {MAX_LINE_BYTES:,} bytes (one prompt per line)")
        try:
            yield raw.decode("utf-8")
        except UnicodeDecodeError:
            raise PromptError(f"{source}:{number}: not UTF-8") from None


def parse_prompts(lines: Iterable[str], source: str = "<prompts>") -> list[Prompt]:
    """Every prompt of `lines` (see `iter_prompts`)."""
    return list(iter_prompts(lines, source))


def iter_prompts(lines: Iterable[str], source: str = "<prompts>") -> Iterator[Prompt]:
    """Non-empty lines, each as it is read; a line starting with `{` is a JSON object ({"text": ..., "voice":
    ..., ...}). Raises PromptError naming the line for a malformed object, an unknown field or a wrong type."""
    for number, line in enumerate(lines, start=1):
        stripped = line.strip()
        if not stripped:
            continue
        if not stripped.startswith("{"):
            yield Prompt(stripped)
            continue
        where = f"{source}:{number}"
        try:
            obj = json.loads(stripped)
        except json.JSONDecodeError as exc:
            raise PromptError(f"{where}: not valid JSON ({exc.msg} at column {exc.colno})") from None
        if not isinstance(obj, dict):
            raise PromptError(f"{where}: a JSON line must be an object")
        unknown = sorted(set(obj) - set(_KINDS))
        if unknown:
            raise PromptError(f"{where}: unknown field(s) {', '.join(unknown)} (known: {', '.join(_KINDS)})")
        if "text" not in obj:
            raise PromptError(f"{where}: the object has no \"text\"")
        for key, value in obj.items():
            kind = _KINDS[key]
            if value is not None and (not isinstance(value, kind) or isinstance(value, bool)):
                raise PromptError(f"{where}: {key} must be {'an integer' if kind is int else 'a string'}")
        if obj.get("seed") is not None and not 0 <= obj["seed"] < 2**32:
            raise PromptError(f"{where}: seed must be in 0..{2**32 - 1}")
        yield Prompt(**obj)
