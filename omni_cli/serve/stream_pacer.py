"""When each complete piece of a WebSocket stream goes to the engine, and the utterance ends between them."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import anyio

from .errors import ApiError


@dataclass(frozen=True)
class Piece:
    """A piece of text to speak: the utterance (input.done cycle) it belongs to and the config it was sent under."""

    utterance: int
    text: str
    config: object  # the StreamConfig in force when the piece's text came


@dataclass(frozen=True)
class UtteranceEnd:
    """input.done's place in the stream: the speaker sends session.done for `utterance` when it comes to it."""

    utterance: int


class Pacer:
    """A piece goes to the engine at once, unless an earlier piece has not been heard yet (no audio out, not
    done). So a piece's first audio never shares the engine with the pieces after it (text sent whole would
    otherwise start all its sentences together), and the next piece is computed while the one before it is
    still being sent. Utterance ends keep their place among the pieces. Runs on the event loop only."""

    def __init__(self, submit, speaker) -> None:
        self.submit, self.speaker = submit, speaker  # submit(config, text) -> ticket or ApiError
        self.waiting: deque[Piece | UtteranceEnd] = deque()
        self.unheard = None  # the ticket of the piece submitted and not yet heard
        self.utterance = 0  # the utterance that input.text adds to now
        self.tickets: list = []  # every piece submitted, cancelled when the session ends
        self.unspoken = 0  # items handed to the speaker and not yet all sent
        self.last_spoken = anyio.current_time()  # when the speaker last finished an item

    @property
    def busy(self) -> bool:
        """Something is still to be said: the client waiting for it is not idle."""
        return bool(self.waiting) or self.unspoken > 0

    def spoken(self) -> None:
        self.unspoken -= 1
        self.last_spoken = anyio.current_time()

    def add(self, texts: list[str], config) -> None:
        self.waiting.extend(Piece(self.utterance, text, config) for text in texts)
        self.pump()

    def end_utterance(self, texts: list[str], config) -> None:
        """input.done: the last pieces of this utterance, then its end; the next text starts a new one."""
        self.waiting.extend(Piece(self.utterance, text, config) for text in texts)
        self.waiting.append(UtteranceEnd(self.utterance))
        self.utterance += 1
        self.pump()

    def heard(self, ticket) -> None:
        """`ticket`'s piece has audio out, or is over."""
        if ticket is self.unheard:
            self.unheard = None
            self.pump()

    def pump(self) -> None:
        while self.waiting:
            if isinstance(self.waiting[0], UtteranceEnd):
                self.unspoken += 1
                self.speaker.send_nowait((self.waiting.popleft(), None))
                continue
            if self.unheard is not None:
                return
            piece = self.waiting.popleft()
            submitted = self.submit(piece.config, piece.text)
            if not isinstance(submitted, ApiError):
                self.tickets.append(submitted)
                self.unheard = submitted
            self.unspoken += 1
            self.speaker.send_nowait((piece, submitted))
