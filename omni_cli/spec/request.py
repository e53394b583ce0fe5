"""A request: what one utterance wants (text, mode, voice, seed, limits) — apart from the card."""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from .errors import SpecError, SpecIssue


@dataclass(frozen=True)
class SpeakRequest:
    text: str
    mode: Literal["echo", "chat"] | None = None  # None: the card's default
    voice: str | None = None  # None: the card's default voice
    seed: int = 0
    max_tokens: int | None = None  # cap on the thinker's reply tokens (chat mode)
    handoff: Literal["barrier", "stream"] | None = None  # None: as the program says
    request_id: str | None = None  # None: the engine numbers it
    profile: Literal["serve", "rollout"] = "serve"  # rollout: every WorkUnit also records its behaviour
    replay: Mapping[str, Sequence[int]] | None = None  # rollout re-scoring: each AR loop's tokens, teacher-forced


def clean_text(text: str, max_chars: int) -> str:
    """The text a request may carry: control characters dropped, whitespace folded, length checked.

    Tabs and line breaks become spaces; other control characters (C0, C1, DEL) are removed, since
    they cannot be spoken. Empty or whitespace-only text and text over `max_chars` are errors.
    """
    kept = []
    for ch in text:
        if ch in "\t\n\r\v\f":
            kept.append(" ")
        elif unicodedata.category(ch) == "Cc" or unicodedata.category(ch) == "Cs":
            continue
        else:
            kept.append(ch)
    cleaned = " ".join("".join(kept).split())
    if not cleaned:
        raise SpecError([SpecIssue("<request>", None, "text", "text is empty (nothing to speak)")])
    if len(cleaned) > max_chars:
        raise SpecError([SpecIssue("<request>", None, "text",
                                   f"text is {len(cleaned)} characters, over the card's limit of {max_chars} "
                                   "(split it into lines: one utterance per line)")])
    return cleaned
