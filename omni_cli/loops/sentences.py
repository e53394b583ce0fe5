"""Loops that run one WorkUnit per sentence: `phonemize` (text -> phoneme ids) and `sentence_frames`
(phoneme ids -> latent frames). Neither is autoregressive: a sentence's unit needs only that sentence.

A text of any length is one utterance: it is split a window at a time, as the sentences before are read, and
in `stream` mode each sentence's items are let go once the loop after has used them, so memory stays flat
in the text's length and the first sentence is read before the rest of the text is looked at.
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from ..backends.sentence_types import (
    SENTENCE,
    TEXT_SPLIT,
    AcousticModel,
    FramesInput,
    PhonemizerModel,
    ReadSentence,
    SentenceFrames,
    SentencePhonemes,
    SplitText,
    TextWindow,
)
from ..spec.card import LoopSpec
from .base import (
    DONE,
    NO_BOUND,
    Done,
    Footprint,
    Loop,
    LoopRequest,
    LoopResult,
    LoopState,
    LoopStatus,
    OutputBound,
    Wait,
    WorkPlan,
)
from .channel import Channel
from .registry import register_loop_kind

T = TypeVar("T")

WINDOW_CHARS = 2000  # text split per text_split unit
# where a window may end: after a sentence's final punctuation (closing quotes too), before a capital or digit
_SENTENCE_END = re.compile(r"[.!?][\"')\]]*\s+(?=[A-Z0-9\"'(])")


def window_end(text: str, start: int, size: int | None = None) -> int:
    """The end of the window of `text` that starts at `start` (`size`: WINDOW_CHARS): its last sentence end, else
    its last space (a sentence longer than a window is cut there), else `size` characters on."""
    size = size or WINDOW_CHARS
    end = start + size
    if end >= len(text):
        return len(text)
    cut = None
    for match in _SENTENCE_END.finditer(text, start + 1, end):
        word = text[text.rfind(" ", start, match.start()) + 1:match.start()]
        if not (word[:1].isupper() and len(word) <= 3):  # "Dr. Smith", "Jan. 3", "U.S. law": not an end
            cut = match.end()
    if cut is not None:
        return cut
    space = text.rfind(" ", start + 1, end)
    return space + 1 if space > start else end


class SentenceFeed(Generic[T]):
    """Items of an upstream sentence loop: each as it comes (`stream`) or all once it closed (`barrier`).

    In `stream` mode the upstream loop keeps in step: it makes sentence k+1 only once this reader is done
    with sentence k (`done_with`). Nothing runs sooner in total on one thread, but what is nearest the
    audio is never queued behind a later sentence's work: the first chunk comes out before sentence 2's
    frames are made, and a sentence's chunks are not held up by the next sentence.
    """

    def __init__(self, channel: Channel[T], mode: str):
        self.channel = channel
        self.mode = mode
        if mode == "stream":
            channel.num_consumed = 0

    def done_with(self, index: int) -> None:
        """Item `index` is used up: upstream may make the one after it, and (stream) it is let go."""
        if self.channel.num_consumed is not None:
            self.channel.num_consumed = max(self.channel.num_consumed, index + 1)
            if index < len(self.channel.items):
                self.channel.items[index] = None  # this feed is its only reader (listeners heard it on put)

    def item(self, index: int) -> T | None:
        """Item `index`, or None while it is not there (or, barrier, while upstream still runs)."""
        if self.mode == "barrier" and not self.channel.is_closed:
            return None
        return self.channel.items[index] if index < len(self.channel.items) else None

    def is_done(self, index: int) -> bool:
        """No item `index` will ever come."""
        return self.channel.is_closed and index >= len(self.channel.items)

    def describe_wait(self) -> str:
        state = "closed" if self.channel.is_closed else "open"
        return f"{self.channel.name}: {len(self.channel.items)} sentences ({state}, {self.mode})"


def ahead_of_reader(out: Channel, index: int) -> bool:
    """Whether making item `index` of `out` now would run ahead of a reader that paces it."""
    return out.num_consumed is not None and index > out.num_consumed


@dataclass
class PhonemizeState(LoopState):
    text: str = ""
    text_pos: int = 0  # the text's first character not split yet
    pending: deque[str] = field(default_factory=deque)  # sentences split and not read yet
    dropped: str = ""  # characters the phonemizer cannot read, each once
    unreported: str = ""  # of those, the ones no published sentence has named yet
    next_sentence: int = 0


@register_loop_kind
class PhonemizeLoop(Loop):
    """A `text_split` unit per window of the text (split into sentences), one `sentence` unit per sentence."""

    kind = "phonemize"
    work_unit = SENTENCE
    roles = ("phonemizer",)
    reads, makes = "clean_text", "phoneme_stream"
    output = Channel
    spec: LoopSpec
    component: PhonemizerModel

    def init(self, feed: str, out: Channel, request: LoopRequest) -> PhonemizeState:
        return PhonemizeState(loop_id=self.loop_id, request_id=request.request_id, text=feed, out=out)

    def next(self, state: PhonemizeState) -> WorkPlan | Wait | Done:
        if state.status is LoopStatus.FINISHED:
            return DONE
        if not state.pending:
            if state.text_pos >= len(state.text):
                state.finish("end")
                return DONE
            state.status = LoopStatus.RUNNING
            end = window_end(state.text, state.text_pos)
            window = TextWindow(state.text[state.text_pos:end], state.next_sentence == 0 and end == len(state.text))
            return WorkPlan(TEXT_SPLIT, state.step, (self.loop_id, TEXT_SPLIT), 0, window)
        if ahead_of_reader(state.out, state.next_sentence):
            state.status = LoopStatus.WAITING
            return Wait(lambda: f"{state.out.name}: sentence {state.next_sentence} waits for the frames before it")
        state.status = LoopStatus.RUNNING
        return WorkPlan(SENTENCE, state.step, (self.loop_id, SENTENCE), 0, state.pending[0])

    def advance(self, state: PhonemizeState, plan: WorkPlan, output: Any) -> PhonemizeState:
        state.step += 1
        if plan.kind == TEXT_SPLIT:
            split: SplitText = output
            state.text_pos += len(plan.inputs.text)
            state.pending.extend(split.sentences)
            new = "".join(ch for ch in split.dropped if ch not in state.dropped)
            state.dropped += new
            state.unreported += new
            if not state.pending and state.text_pos >= len(state.text):
                state.finish("end")
            return state
        index = state.next_sentence
        read: ReadSentence = output
        state.out.put(SentencePhonemes(index, read.text, read.phoneme_ids, state.unreported))
        state.unreported = ""
        state.pending.popleft()
        state.next_sentence += 1
        if not state.pending and state.text_pos >= len(state.text):
            state.finish("end")
        return state

    def finalize(self, state: PhonemizeState) -> LoopResult:
        return LoopResult(self.loop_id, state.step, {"num_sentences": state.next_sentence, "dropped": state.dropped},
                          state.stop_reason)


@dataclass
class FramesState(LoopState):
    feed: SentenceFeed[SentencePhonemes] | None = None
    seed: int = 0
    length_scale: float = 1.0
    num_frames: int = 0
    frames_per_sentence: list[int] = field(default_factory=list)


@register_loop_kind
class SentenceFramesLoop(Loop):
    """One `sentence` unit per sentence: its phoneme ids -> its latent frames, published whole."""

    kind = "sentence_frames"
    work_unit = SENTENCE
    roles = ("acoustic",)
    reads, makes = "phoneme_feed", "frame_stream"
    output = Channel
    takes_speed = True
    spec: LoopSpec
    component: AcousticModel

    def init(self, feed: SentenceFeed, out: Channel, request: LoopRequest) -> FramesState:
        return FramesState(loop_id=self.loop_id, request_id=request.request_id, feed=feed, out=out,
                           seed=request.seed, length_scale=1.0 / request.speed)

    def footprint(self, state: FramesState, upstream: OutputBound) -> tuple[Footprint, OutputBound]:
        # a long sentence's ids; the largest steps are the decoder's
        return Footprint(peak_step_bytes=self.component.step_bytes(512)), NO_BOUND

    def next(self, state: FramesState) -> WorkPlan | Wait | Done:
        if state.status is LoopStatus.FINISHED:
            return DONE
        index = state.step
        if state.feed.is_done(index):
            state.finish("end")
            return DONE
        item = state.feed.item(index)
        if item is None:
            state.status = LoopStatus.WAITING
            return Wait(state.feed.describe_wait)
        if ahead_of_reader(state.out, index):
            state.status = LoopStatus.WAITING
            return Wait(lambda: f"{state.out.name}: sentence {index} waits for the decoder to finish the one before")
        state.status = LoopStatus.RUNNING
        inputs = FramesInput(item.phoneme_ids, state.length_scale, self.component.noise_scale, self.component.noise_w,
                             (state.seed, index))
        return WorkPlan(SENTENCE, index, (self.loop_id, SENTENCE),
                        self.component.step_bytes(len(item.phoneme_ids)), inputs)

    def advance(self, state: FramesState, plan: WorkPlan, output: Any) -> FramesState:
        piece = SentenceFrames(plan.step, output)
        state.frames_per_sentence.append(piece.num_frames)
        state.num_frames += piece.num_frames
        state.step += 1
        state.out.put(piece)
        state.feed.done_with(plan.step)
        if state.feed.is_done(state.step):
            state.finish("end")
        return state

    def finalize(self, state: FramesState) -> LoopResult:
        return LoopResult(self.loop_id, state.step, {"num_frames": state.num_frames,
                                                     "frames_per_sentence": list(state.frames_per_sentence)},
                          state.stop_reason)
