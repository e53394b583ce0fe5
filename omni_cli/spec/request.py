"""A request: what one utterance wants (text, mode, voice, seed, limits) — apart from the card."""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from .errors import SpecError, SpecIssue


@dataclass(frozen=True)
class PriorTurn:
    """An earlier turn of the conversation a chat request continues: who spoke, what, and what it heard and saw."""

    role: Literal["user", "assistant"]
    text: str
    audio: tuple[Any, ...] = ()  # the clips heard in the turn (whole audio.AudioSources), in order
    images: tuple[Any, ...] = ()  # the pictures seen in the turn (audio.seen.SeenImage), in order


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
    speed: float | None = None  # sentence voices: 2.0 speaks twice as fast (VITS length scale 1/2); None: 1.0
    instructions: str | None = None  # how to speak, for a thinker that takes them (Qwen: joins its system prompt)
    audio: Any = None  # heard speech (an audio.AudioSource, possibly still arriving), for a program that listens
    images: tuple = ()  # seen pictures (audio.seen.SeenImage, in order), for a program that sees
    videos: tuple = ()  # watched videos (audio.watched.SeenVideo, in order, after the pictures), likewise
    history: tuple[PriorTurn, ...] = ()  # the conversation before this turn (a chat program renders it first)
    # where whole clips' and pictures' encodings are kept across runs (an omni_cli.encoded.EncodedStore), so a
    # conversation's later runs do not encode its earlier turns again; None: kept only within this process
    keep_encoded: Any = None

    def __post_init__(self) -> None:
        """Each field checked once, here, for the library and the CLI alike: a SpecError naming the field."""
        problems = []

        def choice(name: str, value: object, allowed: tuple) -> None:
            if value not in allowed:
                shown = " | ".join(repr(a) for a in allowed if a is not None)
                problems.append((name, f"expected one of {shown}{' or None' if None in allowed else ''}, got {value!r}"))

        if not isinstance(self.text, str):
            problems.append(("text", f"expected a string, got {type(self.text).__name__}"))
        choice("mode", self.mode, ("echo", "chat", None))
        choice("handoff", self.handoff, ("barrier", "stream", None))
        if not _is_int(self.seed) or not 0 <= self.seed <= SEED_MAX:
            problems.append(("seed", f"expected an integer from 0 to {SEED_MAX}, got {self.seed!r}"))
        if self.max_tokens is not None and (not _is_int(self.max_tokens) or self.max_tokens < 1):
            problems.append(("max_tokens", f"expected a positive integer or None, got {self.max_tokens!r}"))
        if self.voice is not None and (not isinstance(self.voice, str) or not self.voice):
            problems.append(("voice", f"expected a voice name or None, got {self.voice!r}"))
        if self.instructions is not None and not isinstance(self.instructions, str):
            problems.append(("instructions", f"expected a string or None, got {type(self.instructions).__name__}"))
        if not isinstance(self.images, tuple):
            problems.append(("images", f"expected a tuple of images, got {type(self.images).__name__}"))
        if not isinstance(self.videos, tuple):
            problems.append(("videos", f"expected a tuple of videos, got {type(self.videos).__name__}"))
        if not isinstance(self.history, tuple) or not all(_is_turn(t) for t in self.history):
            problems.append(("history", "expected a tuple of PriorTurn (user turns may hold audio and images), "
                                        f"got {self.history!r:.80}"))
        if self.request_id is not None and (not isinstance(self.request_id, str) or not self.request_id):
            problems.append(("request_id", f"expected a non-empty string or None, got {self.request_id!r}"))
        if problems:
            raise SpecError([SpecIssue("<request>", None, name, message) for name, message in problems])


SEED_MAX = 2**32 - 1  # as the CLI's --seed


def _is_turn(turn: object) -> bool:
    return (isinstance(turn, PriorTurn) and turn.role in ("user", "assistant") and isinstance(turn.text, str)
            and isinstance(turn.audio, tuple) and isinstance(turn.images, tuple)
            and (turn.role == "user" or not (turn.audio or turn.images)))


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


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
