"""Rollout prompts: one text per line, or a JSON object per line with per-prompt request fields."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, fields

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


def parse_prompts(lines: Iterable[str], source: str = "<prompts>") -> list[Prompt]:
    """Non-empty lines; a line starting with `{` is a JSON object ({"text": ..., "voice": ..., ...}).
    Raises ValueError naming the line for a malformed object, an unknown field or a wrong type."""
    prompts: list[Prompt] = []
    for number, line in enumerate(lines, start=1):
        stripped = line.strip()
        if not stripped:
            continue
        if not stripped.startswith("{"):
            prompts.append(Prompt(stripped))
            continue
        where = f"{source}:{number}"
        try:
            obj = json.loads(stripped)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{where}: not valid JSON ({exc.msg} at column {exc.colno})") from None
        if not isinstance(obj, dict):
            raise ValueError(f"{where}: a JSON line must be an object")
        unknown = sorted(set(obj) - set(_KINDS))
        if unknown:
            raise ValueError(f"{where}: unknown field(s) {', '.join(unknown)} (known: {', '.join(_KINDS)})")
        if "text" not in obj:
            raise ValueError(f"{where}: the object has no \"text\"")
        for key, value in obj.items():
            kind = _KINDS[key]
            if value is not None and (not isinstance(value, kind) or isinstance(value, bool)):
                raise ValueError(f"{where}: {key} must be {'an integer' if kind is int else 'a string'}")
        if obj.get("seed") is not None and not 0 <= obj["seed"] < 2**32:
            raise ValueError(f"{where}: seed must be in 0..{2**32 - 1}")
        prompts.append(Prompt(**obj))
    return prompts
