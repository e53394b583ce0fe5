"""The thinker's input for a chat turn that may hold heard audio: its prefill comes in parts, block by block."""

from __future__ import annotations

from ..backends.base import ListenPrompt, Prefill
from .base import NO_BOUND, OutputBound
from .channel import Channel
from .feeds import ARFeed, StepFeed


class ListenFeed(ARFeed):
    """Parts, in order: the ids before the audio; one part per encoded block (its rows, each at an audio
    position); then, once the encoder's channel closed, the ids after it (the last part, whose logits give the
    first reply token). `stream` hands each block over as it is encoded (the prefill keeps pace with the speaker);
    `barrier` waits for the whole clip. Both prefill the same positions with the same rows."""

    def __init__(self, prompt: ListenPrompt, heard: Channel | None, mode: str, max_audio_rows: int,
                 max_tokens: int | None = None):
        self.prompt = prompt
        self.heard = heard  # None: a turn without audio
        self.is_barrier = mode == "barrier"
        self.max_audio_rows = max_audio_rows
        self._max_tokens = max_tokens

    def max_tokens(self) -> int | None:
        return self._max_tokens

    def prefill(self) -> Prefill | None:
        return self.prefill_part(0)

    def prefill_part(self, done: int) -> Prefill | None:
        before, after = self.prompt.before_ids, self.prompt.after_ids
        if self.heard is None:
            return Prefill(before + after) if done == 0 else None
        if done < len(before):
            return Prefill(before[done:], is_last=False)
        pos = done - len(before)
        if self.is_barrier and not self.heard.is_closed:
            return None
        for block in self.heard.items:
            n = len(block.rows)
            if n == 0:
                continue
            if pos == 0:
                return Prefill([self.prompt.audio_id] * n, payload=block.rows, is_last=False)
            pos -= n
        if not self.heard.is_closed:
            return None
        return Prefill(list(after), is_last=True)

    def step(self, step: int) -> StepFeed:
        return StepFeed()

    def prefill_is_known(self) -> bool:
        return self.heard is None

    def prefill_bound(self, upstream: OutputBound = NO_BOUND) -> int:
        audio = 0 if self.heard is None else self.max_audio_rows
        return len(self.prompt.before_ids) + audio + len(self.prompt.after_ids)

    def describe_wait(self) -> str:
        if self.heard is None:
            return "prompt"
        state = "closed" if self.heard.is_closed else "open"
        return f"{self.heard.name}: {len(self.heard)} blocks ({state}, {'barrier' if self.is_barrier else 'stream'})"
