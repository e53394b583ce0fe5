"""Feeds: what a loop reads from its prompt slot, and the hand-off modes (barrier, stream) between loops."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..backends.base import ARItem, Prefill, TalkerModel, ThinkerPrompt
from .base import NO_BOUND, OutputBound
from .channel import ARChannel


@dataclass(slots=True)
class StepFeed:
    """The extra input of one AR decode step. (Not frozen: one is made per step, on the engine's thread.)"""

    forced_token: int | None = None  # echo: the token this step must produce
    cond: Any = None  # talker: the conditioning vector


class ARFeed:
    """An AR loop's input. None from a method means "not there yet": the loop answers Wait."""

    def prefill(self) -> Prefill | None:
        raise NotImplementedError

    def prefill_part(self, done: int) -> Prefill | None:
        """The next part of a prefill given in parts, after `done` positions (ListenFeed: audio block by block);
        a part with `is_last` False makes no token. By default the prefill is one part."""
        return self.prefill() if done == 0 else None

    def step(self, step: int) -> StepFeed | None:
        raise NotImplementedError

    def forced_at(self, step: int) -> int | None:
        """The token step `step` must produce (echo mode), None to sample it."""
        return None

    def bounds(self) -> tuple[int, int | None]:
        """(fewest, most) tokens to generate; most None means "the loop's max_tokens"."""
        return 0, None

    def max_tokens(self) -> int | None:
        """The caller's cap on this loop's tokens (the request's max_tokens), None: the card's alone."""
        return None

    def prefill_is_known(self) -> bool:
        """Whether prefill_bound() is the exact prompt length already (checked against the model's positions
        before the run), not a bound on what upstream will send."""
        return False

    def bound_is_cap(self) -> bool:
        """Whether stopping at bounds()'s `most` cuts the output short (a cap) rather than ends it."""
        return False

    def max_items_bound(self, upstream: OutputBound = NO_BOUND) -> int | None:
        """Most tokens this request can make through this feed before it runs, given what upstream can send
        (bounds() says it for what upstream has sent so far); None: only the loop's max_tokens bounds them."""
        return None

    def max_positions_bound(self, upstream: OutputBound = NO_BOUND) -> int | None:
        """Most positions this request can reach (prompt + tokens), given what upstream can send; None if
        unknown."""
        return None

    def prefill_bound(self, upstream: OutputBound = NO_BOUND) -> int:
        """Positions the prefill will consume (an upper bound when not known yet), given what upstream can send."""
        return 1

    def describe_wait(self) -> str:
        return "input not ready"


class ThinkerFeed(ARFeed):
    """Static: the tokenized prompt, and in echo mode the forced reply."""

    def __init__(self, prompt: ThinkerPrompt, end_id: int, max_tokens: int | None = None):
        self.prompt = prompt
        self.end_id = end_id
        self._max_tokens = max_tokens

    def max_tokens(self) -> int | None:
        return self._max_tokens

    def prefill(self) -> Prefill:
        return Prefill(list(self.prompt.prefill_ids))

    def step(self, step: int) -> StepFeed:
        return StepFeed(forced_token=self.forced_at(step))

    def forced_at(self, step: int) -> int | None:
        forced = self.prompt.forced_ids
        if forced is None:
            return None
        return forced[step] if step < len(forced) else self.end_id

    def bounds(self) -> tuple[int, int | None]:
        if self.prompt.forced_ids is not None:
            return 0, len(self.prompt.forced_ids) + 1
        return 0, None

    def prefill_bound(self, upstream: OutputBound = NO_BOUND) -> int:
        return len(self.prompt.prefill_ids)

    def max_items_bound(self, upstream: OutputBound = NO_BOUND) -> int | None:
        return self.bounds()[1]

    def prefill_is_known(self) -> bool:
        return True

    def max_positions_bound(self, upstream: OutputBound = NO_BOUND) -> int | None:
        if self.prompt.forced_ids is None:
            return None
        return len(self.prompt.prefill_ids) + len(self.prompt.forced_ids) + 1


class TalkerFeed(ARFeed):
    """thinker → talker, full payload: thinker tokens and hidden states become talker conditioning."""

    def __init__(self, talker: TalkerModel, upstream: ARChannel[ARItem], mode: str, voice: str | None):
        self.talker = talker
        self.upstream = upstream
        self.is_barrier = mode == "barrier"
        self.voice = voice

    def _visible(self) -> Sequence[ARItem] | None:
        if self.is_barrier and not self.upstream.is_closed:
            return None
        return self.upstream.items

    def prefill(self) -> Prefill | None:
        items = self._visible()
        if items is None or not items:
            return None
        return self.talker.prefill_from(items, self.upstream.is_closed, self.voice)

    def step(self, step: int) -> StepFeed | None:
        items = self._visible()
        if items is None:
            return None
        cond = self.talker.cond_for_step(items, self.upstream.is_closed, step)
        return None if cond is None else StepFeed(cond=cond)

    def bounds(self) -> tuple[int, int | None]:
        return self.talker.codes_bounds(self.upstream.items)

    def bound_is_cap(self) -> bool:
        return self.talker.codes_bound_is_cap

    def max_items_bound(self, upstream: OutputBound = NO_BOUND) -> int | None:
        return None if upstream.max_items is None else self.talker.max_codes_for(upstream.max_items)

    def max_positions_bound(self, upstream: OutputBound = NO_BOUND) -> int | None:
        codes = self.max_items_bound(upstream)
        return None if codes is None else self.prefill_bound(upstream) + codes

    def prefill_bound(self, upstream: OutputBound = NO_BOUND) -> int:
        # the talker's prefill holds one row per thinker prompt position, plus a few of its own
        return upstream.prompt_positions + 2

    def describe_wait(self) -> str:
        state = "closed" if self.upstream.is_closed else "open"
        return f"{self.upstream.name}: {len(self.upstream)} items ({state}, {'barrier' if self.is_barrier else 'stream'})"


class CodesFeed:
    """talker → vocoder: the codec tokens with special ids stripped, as a growing list."""

    def __init__(self, talker: TalkerModel, upstream: ARChannel[ARItem], mode: str):
        self.talker = talker
        self.upstream = upstream
        self.is_barrier = mode == "barrier"
        self.codes: list[int] = []
        self._seen = 0

    def available(self) -> tuple[list[int], bool] | None:
        """(codes so far, is_final), or None while a barrier holds them back."""
        if self.is_barrier and not self.upstream.is_closed:
            return None
        items = self.upstream.items
        while self._seen < len(items):
            code = self.talker.code_of(items[self._seen].token)
            if code is not None:
                self.codes.append(code)
            self._seen += 1
        return self.codes, self.upstream.is_closed

    def describe_wait(self) -> str:
        return f"{self.upstream.name}: {len(self.codes)} codes ({'barrier' if self.is_barrier else 'stream'})"
