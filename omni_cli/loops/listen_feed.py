"""The thinker's input for a chat turn that may hold heard audio: its prefill comes in parts, block by block."""

from __future__ import annotations

from ..backends.base import ListenPrompt, Prefill
from .base import NO_BOUND, OutputBound
from .channel import Channel
from .feeds import ARFeed, StepFeed


class ListenFeed(ARFeed):
    """Parts, in order: the prompt's first run of ids; one part per encoded block of clip 0 (its rows, each at an
    audio position); the next run; clip 1's blocks; ... the last run (whose logits give the first reply token).
    A conversation's earlier clips come first, this turn's last. `stream` hands each block over as it is encoded
    (the prefill keeps pace with the speaker); `barrier` waits for every clip. Both prefill the same positions
    with the same rows."""

    def __init__(self, prompt: ListenPrompt, heard: Channel | None, mode: str, max_audio_rows: int,
                 max_tokens: int | None = None):
        self.prompt = prompt
        self.heard = heard  # None: no clip in the conversation
        self.is_barrier = mode == "barrier"
        self.max_audio_rows = max_audio_rows
        self._max_tokens = max_tokens

    def max_tokens(self) -> int | None:
        return self._max_tokens

    def prefill(self) -> Prefill | None:
        return self.prefill_part(0)

    def prefill_part(self, done: int) -> Prefill | None:
        runs = self.prompt.runs
        if self.heard is None:
            return Prefill([i for run in runs for i in run]) if done == 0 else None
        pos, blocks = done, self.heard.items
        for clip, run in enumerate(runs):
            last = clip == len(runs) - 1
            if pos < len(run):
                return Prefill(run[pos:], is_last=last)
            pos -= len(run)
            if last or (self.is_barrier and not self.heard.is_closed):
                return None
            ended = self.heard.is_closed or any(b.clip > clip for b in blocks)
            for block in (b for b in blocks if b.clip == clip):
                n = len(block.rows)
                if n and pos == 0:
                    return Prefill([self.prompt.audio_id] * n, payload=block.rows, is_last=False)
                pos -= n
                ended = ended or block.ends_clip
            if not ended:
                return None  # the clip is still being encoded
        return None

    def step(self, step: int) -> StepFeed:
        return StepFeed()

    def prefill_is_known(self) -> bool:
        return self.heard is None

    def prefill_bound(self, upstream: OutputBound = NO_BOUND) -> int:
        audio = 0 if self.heard is None else self.max_audio_rows
        return sum(len(run) for run in self.prompt.runs) + audio

    def describe_wait(self) -> str:
        if self.heard is None:
            return "prompt"
        state = "closed" if self.heard.is_closed else "open"
        return f"{self.heard.name}: {len(self.heard)} blocks ({state}, {'barrier' if self.is_barrier else 'stream'})"
