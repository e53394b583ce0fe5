"""audio_decode: the vocoder, one WorkUnit per chunk of codes, each chunk's samples final when it ends."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..backends.base import AUDIO_CHUNK, VocoderChunkInput, VocoderChunkOutput, VocoderModel
from ..spec.card import LoopSpec
from .base import (
    DONE,
    NO_BOUND,
    UNPACED,
    Done,
    Footprint,
    Loop,
    LoopRequest,
    LoopResult,
    LoopState,
    LoopStatus,
    OutputBound,
    Pace,
    Wait,
    WorkPlan,
)
from .channel import Channel
from .feeds import CodesFeed
from .recorder import record_audio
from .registry import register_loop_kind


@dataclass
class AudioPiece:
    """What an audio loop publishes: its `index`-th chunk of samples, in order."""

    index: int
    samples: np.ndarray


@dataclass
class AudioState(LoopState):
    feed: CodesFeed | None = None
    vocoder_state: Any = None
    next_code: int = 0  # first code of the next chunk
    num_samples: int = 0
    # waiting for a chunk of fixed size: the talker items it needs at least (codes are at most its items), and
    # the Wait given under that Pace; below that many nothing can have changed, and next() answers it again
    ready_items: int = 0
    waiting: Wait | None = None
    waited_pace: Pace | None = None
    split_first: bool = False  # first_audio_codes: this request's first chunk goes out in two pieces
    merged_first: int = 1  # shared_first_codes: the schedule's chunks this request's first chunk reached into

    def release(self) -> None:
        self.vocoder_state = None


@register_loop_kind
class AudioDecodeLoop(Loop):
    """Chunks from the card's schedule, as the scheduler's Pace says for this step: a first chunk split (a
    request alone) or merged (beside others), the largest when the machine is slow, or what the player's
    buffer affords. Same state and Pace, same chunk: the loop never reads the clock or another request."""

    kind = "audio_decode"
    work_unit = AUDIO_CHUNK
    roles = ("vocoder",)
    reads, makes = "codes_feed", "audio_stream"
    output = Channel
    spec: LoopSpec
    component: VocoderModel

    def __init__(self, loop_id: str, spec: LoopSpec, component: VocoderModel, stage: int):
        super().__init__(loop_id, spec, component, stage)
        self.chunk_codes = spec.chunk_codes  # 0: the whole utterance as one chunk
        # codes of context a chunk's window reads besides its own (a cost per chunk, whatever its size)
        self.context_codes = int(component.context_codes)
        # beside other requests: the first chunk's codes and the schedule's chunks it reaches into (1: none shared)
        self._shared_codes, self._shared_count = spec.shared_first()
        if spec.chunk_codes and (spec.pace != "schedule" or spec.first_audio_codes or spec.shared_first_codes):
            self.pacing = spec.pace  # else the card's schedule alone: the scheduler need not pace it

    def init(self, feed: CodesFeed, out: Channel, request: LoopRequest) -> AudioState:
        return AudioState(loop_id=self.loop_id, request_id=request.request_id, feed=feed, out=out,
                          vocoder_state=self.component.new_state(request.voice, seed=request.seed))

    def footprint(self, state: AudioState, upstream: OutputBound) -> tuple[Footprint, OutputBound]:
        """Sized from the talker's bound on this request's tokens (codes are at most that many), not an
        assumed utterance length."""
        codes = upstream.max_items
        resident = self.component.state_bytes(codes)
        if self.chunk_codes == 0:  # one chunk: the whole utterance, from its start
            return Footprint(resident, self.component.step_bytes(codes or 1, start=0, is_final=True)), NO_BOUND
        # the largest chunk: chunk_codes, or a shared first chunk beyond it; the last chunk also takes a rest
        # shorter than its look-ahead (next()), which as final codes reads no look-ahead past it
        largest = max(self.chunk_codes, self._shared_codes)
        step = max(self.component.step_bytes(largest),
                   self.component.step_bytes(largest + self.component.lookahead_codes, is_final=True))
        return Footprint(resident, step), NO_BOUND

    def next(self, state: AudioState, pace: Pace = UNPACED) -> WorkPlan | Wait | Done:
        if state.status is LoopStatus.FINISHED:
            return DONE
        upstream = state.feed.upstream
        if len(upstream.items) < state.ready_items and not upstream.is_closed and pace is state.waited_pace:
            return state.waiting  # most ticks before each chunk: one comparison instead of the checks below
        seen = state.feed.available()
        if seen is None:
            return Wait(state.feed.describe_wait)
        codes, is_final = seen
        start, n = state.next_code, len(codes)
        if is_final and start >= n:
            state.finish("end")
            return DONE
        if self.chunk_codes == 0:
            if not is_final:
                return Wait(state.feed.describe_wait)
            end = window_end = n
        else:
            size, window = self._planned(state, pace)
            end = min(start + size, n)
            if state.step and is_final and n - end < self.component.lookahead_codes:
                # the rest is inside the look-ahead this chunk's window reads anyway: decoded here, not by a
                # call of its own that would pay a whole window's context for a few codes. Fewer than the
                # look-ahead: so many codes after a chunk keep it waiting until the codes are final, on every
                # placement and hand-off alike, so where the chunks end does not depend on timing. Not the
                # first chunk: first audio waits on its call, and a short utterance would become one chunk.
                end = n
            # its window's last code, when it reaches past the chunk (the first piece of a split first chunk)
            window_end = min(start + window, n) if window else end
            # a chunk runs once its window is full and its look-ahead has arrived, or the codes are final
            if not is_final and (window_end - start < max(size, window) or n < window_end + self.component.lookahead_codes):
                state.status = LoopStatus.WAITING
                wait = Wait(state.feed.describe_wait)
                # (an affordable size changes with the clock, and a merged first chunk when the others finish:
                # looked at again each tick)
                if pace.affordable is None and not (state.step == 0 and state.merged_first > 1):
                    state.ready_items = start + max(size, window) + self.component.lookahead_codes
                    state.waiting, state.waited_pace = wait, pace
                return wait
        state.status, state.ready_items = LoopStatus.RUNNING, 0
        inputs = VocoderChunkInput(state.vocoder_state, codes, start, end, is_final,
                                   window_end if window_end > end else None)
        # its work for the scheduler's clock: the first chunk's window and look-ahead, later ones' codes and
        # context; a split first chunk's first piece is timed with the second
        work = window_end - start + self.component.lookahead_codes if state.step == 0 else end - start + self.context_codes
        # (a chunk of final codes that is not the last one still reads look-ahead: sized as not final; a first
        # piece, as the whole window it runs)
        return WorkPlan(AUDIO_CHUNK, state.step, (self.loop_id, AUDIO_CHUNK),
                        self.component.step_bytes(window_end - start, start=start, is_final=is_final and window_end == n),
                        inputs, None, work, state.split_first and state.step == 0)

    def advance(self, state: AudioState, plan: WorkPlan, output: VocoderChunkOutput) -> AudioState:
        inputs: VocoderChunkInput = plan.inputs
        made = int(output.samples.shape[0])
        if state.recorder is not None:  # rollout profile
            state.recorder.audio_chunk(inputs.start, inputs.end, made, output.noise_span)
        state.out.put(AudioPiece(state.step, output.samples))
        state.num_samples += made
        state.next_code = inputs.end
        state.step += 1
        if inputs.is_final and inputs.end == len(inputs.codes):
            state.finish("end")
        return state

    def _planned(self, state: AudioState, pace: Pace) -> tuple[int, int]:
        """Codes in the next chunk, and in its vocoder window when that reaches further (else 0). With
        first_audio_codes, a request alone gets its first chunk in two pieces: the window of the whole first
        chunk, whose audio goes out up to first_audio_codes, then the rest of it from what that window made;
        the chunks after them are sized as if the first had been one. Alone is where first audio waits on the
        vocoder's own call; beside others, a second call for each first chunk costs throughput. With
        shared_first_codes, a request beside others gets a first chunk of that many codes, then the schedule's
        chunk after the one it ends in: shared calls come later, and its audio must last until the next."""
        split, merged = self.spec.first_audio_codes, self._shared_count
        if (split or merged > 1) and state.step == 0:
            state.split_first = bool(split) and not pace.shared
            state.merged_first = merged if pace.shared else 1
            if state.split_first:
                return split, self.spec.chunk_size(0)
            if state.merged_first > 1:
                return self._shared_codes, 0
        if state.split_first and state.step == 1:
            return self.spec.chunk_size(0) - split, 0
        if pace.largest:  # a player waits for the next chunk whatever its size
            return self.chunk_codes, 0
        if pace.affordable is not None and state.step:  # what the buffered audio pays for, its context included
            return max(self.spec.chunk_size(0), min(self.chunk_codes, pace.affordable - self.context_codes)), 0
        return self.spec.chunk_size(self._index(state)), 0

    def _index(self, state: AudioState) -> int:
        """The chunk's place in the card's schedule: the two pieces of a split first chunk count as one, a
        merged first chunk as the chunks it covered."""
        if state.split_first and state.step:
            return state.step - 1
        return state.step + state.merged_first - 1 if state.step else 0

    def finalize(self, state: AudioState) -> LoopResult:
        outputs = {"num_samples": state.num_samples, "num_codes": state.next_code}
        if state.recorder is not None:  # rollout profile: the chunks' behaviour, column by column
            outputs["behaviour"] = state.recorder.columns()
        return LoopResult(self.loop_id, state.step, outputs, state.stop_reason)

    @classmethod
    def describe(cls, spec: LoopSpec) -> str:
        if spec.first_chunks:
            growth = "growing by playback slack" if spec.pace == "slack" else "doubling"
            firsts = ", ".join(map(str, spec.first_chunks)) + (", then" if len(spec.first_chunks) > 1 else "")
            text = f", chunk_codes {firsts} {growth} to {spec.chunk_codes}"
        else:
            text = f", chunk_codes {spec.chunk_codes}"
        if spec.first_audio_codes:
            text += f", first audio after {spec.first_audio_codes}"
        if spec.shared_first_codes and spec.chunk_codes:
            text += f", the first {spec.shared_first_codes} codes as one chunk beside other requests"
        if spec.pace == "largest_when_slow" and spec.chunk_codes:
            text += f", {spec.chunk_codes} after a chunk slower than its audio"
        return text

    def start_recording(self, state: AudioState, replay: Mapping[str, Sequence[int]] | None) -> None:
        record_audio(self, state, replay)

    def behaviour_settings(self, seed: int) -> dict[str, Any]:
        """What sized the chunks (the behaviour columns say what they were: the scheduler's pace reads the clock)."""
        spec = self.spec
        return {"chunk_codes": spec.chunk_codes, "first_chunk_codes": spec.first_chunk_codes,
                "first_audio_codes": spec.first_audio_codes, "shared_first_codes": spec.shared_first_codes,
                "pace": spec.pace, "noise_seed": seed}
