"""Loops that run one WorkUnit per sentence: `phonemize` (text -> phoneme ids) and `sentence_frames`
(phoneme ids -> latent frames). Neither is autoregressive: a sentence's unit needs only that sentence.
"""

from __future__ import annotations

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
        """Item `index` is used up: upstream may make the one after it."""
        if self.channel.num_consumed is not None:
            self.channel.num_consumed = max(self.channel.num_consumed, index + 1)

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
    out: Channel | None = None
    sentences: list[str] | None = None  # after the text_split unit
    dropped: str = ""
    next_sentence: int = 0


@register_loop_kind
class PhonemizeLoop(Loop):
    """A `text_split` unit (split into sentences), then one `sentence` unit per sentence (read by gruut)."""

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
        if state.sentences is not None and ahead_of_reader(state.out, state.next_sentence):
            state.status = LoopStatus.WAITING
            return Wait(lambda: f"{state.out.name}: sentence {state.next_sentence} waits for the frames before it")
        state.status = LoopStatus.RUNNING
        if state.sentences is None:
            return WorkPlan(TEXT_SPLIT, state.step, (self.loop_id, TEXT_SPLIT), 0,
                            state.text)
        return WorkPlan(SENTENCE, state.step, (self.loop_id, SENTENCE), 0,
                        state.sentences[state.next_sentence])

    def advance(self, state: PhonemizeState, plan: WorkPlan, output: Any) -> PhonemizeState:
        state.step += 1
        if plan.kind == TEXT_SPLIT:
            split: SplitText = output
            state.sentences, state.dropped = split.sentences, split.dropped
            return state
        index = state.next_sentence
        read: ReadSentence = output
        state.out.put(SentencePhonemes(index, read.text, read.phoneme_ids, state.dropped if index == 0 else ""))
        state.next_sentence += 1
        if state.next_sentence == len(state.sentences):
            self._finish(state, "end")
        return state

    def _finish(self, state: PhonemizeState, reason: str | None) -> None:
        state.status = LoopStatus.FINISHED
        state.stop_reason = reason
        state.out.close()

    def finalize(self, state: PhonemizeState) -> LoopResult:
        return LoopResult(self.loop_id, state.step, {"num_sentences": state.next_sentence, "dropped": state.dropped},
                          state.stop_reason)

    def abort(self, state: PhonemizeState) -> None:
        self._finish(state, None)


@dataclass
class FramesState(LoopState):
    feed: SentenceFeed[SentencePhonemes] | None = None
    out: Channel | None = None
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
            self._finish(state, "end")
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
            self._finish(state, "end")
        return state

    def _finish(self, state: FramesState, reason: str | None) -> None:
        state.status = LoopStatus.FINISHED
        state.stop_reason = reason
        state.out.close()

    def finalize(self, state: FramesState) -> LoopResult:
        return LoopResult(self.loop_id, state.step, {"num_frames": state.num_frames,
                                                     "frames_per_sentence": list(state.frames_per_sentence)},
                          state.stop_reason)

    def abort(self, state: FramesState) -> None:
        self._finish(state, None)
