"""audio_decode: the vocoder, one WorkUnit per chunk of codes, each chunk's samples final when it ends."""

from __future__ import annotations

import time
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..backends.base import AUDIO_CHUNK, VocoderChunkInput, VocoderChunkOutput, VocoderModel
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
    out: Channel | None = None
    vocoder_state: Any = None
    next_code: int = 0  # first code of the next chunk
    num_samples: int = 0
    stop_reason: str | None = None  # "end": every code was decoded
    # chunk_growth slack (planned_at also for largest_when_slow): when the chunk in flight was planned, when the
    # first and the latest audio came, and the seconds per code (its context included) from the audio before
    # the last chunk to the last chunk's: the talker making its codes and the vocoder decoding them, as this
    # request saw it
    planned_at: float | None = None
    first_audio_at: float | None = None
    last_audio_at: float | None = None
    per_code_s: float | None = None
    # waiting for a chunk of fixed size: the talker items it needs at least (codes are at most its items), and
    # the Wait given; below that many nothing can have changed, and next() answers it without looking again
    ready_items: int = 0
    waiting: Wait | None = None
    split_first: bool = False  # first_audio_codes: this request's first chunk goes out in two pieces
    behind: bool = False  # largest_when_slow: this request's last chunk took far longer to make than its audio lasts
    merged_first: int = 1  # shared_first_chunks/codes: the schedule's chunks this request's first chunk reached into


@register_loop_kind
class AudioDecodeLoop(Loop):
    kind = "audio_decode"
    work_unit = AUDIO_CHUNK
    roles = ("vocoder",)
    reads, makes = "codes_feed", "audio_stream"
    output = Channel
    spec: LoopSpec
    component: VocoderModel

    SLACK_SHARE = 0.8  # of the audio ahead of real time, what the next chunk may spend (the talker needs some)
    # largest_when_slow: a chunk is behind when it took more than this many times its audio's length. Not 1: a
    # small chunk's call is mostly fixed cost, so on a machine near real time one slow moment makes a small
    # chunk take longer than its audio, where the next chunk at the largest size would come far later than the
    # schedule's (a stall); on a machine many times slower than real time the rule still acts from the first
    BEHIND_FACTOR = 2.0
    clock = staticmethod(time.perf_counter)

    def __init__(self, loop_id: str, spec: LoopSpec, component: VocoderModel, stage: int):
        super().__init__(loop_id, spec, component, stage)
        self.chunk_codes = spec.chunk_codes  # 0: the whole utterance as one chunk
        # codes of context a chunk's window reads besides its own (a cost per chunk, whatever its size)
        self.context_codes = int(component.context_codes)
        self._slack = spec.chunk_growth == "slack"  # else the sizes are the card's alone (no call per tick)
        self._timed = self._slack or spec.largest_when_slow  # each chunk's time from its plan to its audio
        # beside other requests: the first chunk's codes and the schedule's chunks it reaches into (1: none shared)
        self._shared_codes, self._shared_count = spec.shared_first()
        # this loop's requests (a state leaves when it is dropped): whether a first chunk is alone
        self._states: weakref.WeakValueDictionary[int, AudioState] = weakref.WeakValueDictionary()

    def init(self, feed: CodesFeed, out: Channel, request: LoopRequest) -> AudioState:
        state = AudioState(loop_id=self.loop_id, request_id=request.request_id, feed=feed, out=out,
                           vocoder_state=self.component.new_state(request.voice, seed=request.seed))
        self._states[id(state)] = state
        return state

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

    def next(self, state: AudioState) -> WorkPlan | Wait | Done:
        if state.status is LoopStatus.FINISHED:
            return DONE
        upstream = state.feed.upstream
        if len(upstream.items) < state.ready_items and not upstream.is_closed:
            return state.waiting  # most ticks before each chunk: one comparison instead of the checks below
        seen = state.feed.available()
        if seen is None:
            return Wait(state.feed.describe_wait)
        codes, is_final = seen
        start, n = state.next_code, len(codes)
        if is_final and start >= n:
            self._finish(state, "end")
            return DONE
        if self.chunk_codes == 0:
            if not is_final:
                return Wait(state.feed.describe_wait)
            end = window_end = n
        else:
            size, window = self._planned(state)
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
                # (slack sizes change as time passes, and a merged first chunk when the others finish: looked at
                # again each tick)
                if not self._slack and not (state.step == 0 and state.merged_first > 1):
                    state.ready_items = start + max(size, window) + self.component.lookahead_codes
                    state.waiting = wait
                return wait
        state.status, state.ready_items = LoopStatus.RUNNING, 0
        if self._timed and not (state.split_first and state.step == 1):  # (a split first chunk: from its window)
            state.planned_at = self.clock()
        inputs = VocoderChunkInput(state.vocoder_state, codes, start, end, is_final,
                                   window_end if window_end > end else None)
        # (a chunk of final codes that is not the last one still reads look-ahead: sized as not final; a first
        # piece, as the whole window it runs)
        return WorkPlan(AUDIO_CHUNK, state.step, (self.loop_id, AUDIO_CHUNK),
                        self.component.step_bytes(window_end - start, start=start, is_final=is_final and window_end == n),
                        inputs)

    def advance(self, state: AudioState, plan: WorkPlan, output: VocoderChunkOutput) -> AudioState:
        inputs: VocoderChunkInput = plan.inputs
        made = int(output.samples.shape[0])
        if state.recorder is not None:  # rollout profile
            state.recorder.audio_chunk(inputs.start, inputs.end, made, output.noise_span)
        state.out.put(AudioPiece(state.step, output.samples))
        state.num_samples += made
        if self._timed and state.planned_at is not None:
            self._timed_audio(state, inputs, made)
        state.next_code = inputs.end
        state.step += 1
        if inputs.is_final and inputs.end == len(inputs.codes):
            self._finish(state, "end")
        return state

    def _timed_audio(self, state: AudioState, inputs: VocoderChunkInput, made_samples: int) -> None:
        """A chunk's audio is out, `made_samples` of it: what largest_when_slow and slack sizing learn from its
        time (one look at the clock for both)."""
        now = self.clock()
        if self.spec.largest_when_slow and not (state.split_first and state.step == 0):
            # (a split first chunk is judged once both pieces are out: its window made both)
            samples = state.num_samples if state.split_first and state.step == 1 else made_samples
            state.behind = now - state.planned_at > self.BEHIND_FACTOR * samples / self.component.sample_rate
        if self._slack:
            if state.first_audio_at is None and state.num_samples:
                state.first_audio_at = now
            if state.last_audio_at is None:  # the first chunk: its own time, over its codes and look-ahead
                made = (inputs.window_end or inputs.end) - inputs.start  # a first piece's window made the whole first chunk
                state.per_code_s = (now - state.planned_at) / (made + self.component.lookahead_codes)
            else:
                state.per_code_s = (now - state.last_audio_at) / (inputs.end - inputs.start + self.context_codes)
            state.last_audio_at = now

    def _planned(self, state: AudioState) -> tuple[int, int]:
        """Codes in the next chunk, and in its vocoder window when that reaches further (else 0). With
        first_audio_codes, a request alone in this loop gets its first chunk in two pieces: the window of the
        whole first chunk, whose audio goes out up to first_audio_codes, then the rest of it from what that
        window made; the chunks after them are sized as if the first had been one. Alone is where first audio
        waits on the vocoder's own call; beside other requests, the vocoder's calls are shared and a second
        BigVGAN call for each first chunk costs throughput (5% at concurrency 8 in `omni bench --reference`).
        With shared_first_chunks, a request beside others gets the schedule's first chunks as one (with
        shared_first_codes, a first chunk of that many codes, and then the schedule's next chunk after the one
        it ends in): the shared calls come later, and a first chunk's audio must last until the next is made."""
        split, merged = self.spec.first_audio_codes, self._shared_count
        if (split or merged > 1) and state.step == 0:
            alone = not any(other is not state and other.status is not LoopStatus.FINISHED
                            for other in list(self._states.values()))
            state.split_first = bool(split) and alone
            state.merged_first = merged if not alone else 1
            if state.split_first:
                return split, self.spec.chunk_size(0)
            if state.merged_first > 1:
                return self._shared_codes, 0
        if state.split_first and state.step == 1:
            return self.spec.chunk_size(0) - split, 0
        if state.behind:  # largest_when_slow: a player waits for the next chunk whatever its size
            return self.chunk_codes, 0
        return (self._chunk_size(state) if self._slack else self.spec.chunk_size(self._index(state))), 0

    def _index(self, state: AudioState) -> int:
        """The chunk's place in the card's schedule: the two pieces of a split first chunk count as one, a
        merged first chunk as the chunks it covered."""
        if state.split_first and state.step:
            return state.step - 1
        return state.step + state.merged_first - 1 if state.step else 0

    def _chunk_size(self, state: AudioState) -> int:
        """Codes in the next chunk. slack: what the audio ahead of real time pays for (a player that started
        at the first audio has `ahead` seconds left), at the last chunk's seconds per code; recomputed while
        the chunk waits for its codes, so a chunk shrinks as its slack runs down."""
        if self.spec.chunk_growth != "slack" or state.first_audio_at is None or state.per_code_s is None:
            return self.spec.chunk_size(self._index(state))
        ahead = state.num_samples / self.component.sample_rate - (self.clock() - state.first_audio_at)
        affordable = int(ahead * self.SLACK_SHARE / state.per_code_s) - self.context_codes
        return max(self.spec.chunk_size(0), min(self.chunk_codes, affordable))

    def _finish(self, state: AudioState, reason: str | None) -> None:
        state.status = LoopStatus.FINISHED
        state.stop_reason = reason
        state.vocoder_state = None
        state.out.close()

    def finalize(self, state: AudioState) -> LoopResult:
        outputs = {"num_samples": state.num_samples, "num_codes": state.next_code}
        if state.recorder is not None:  # rollout profile: the chunks' behaviour, column by column
            outputs["behaviour"] = state.recorder.columns()
        return LoopResult(self.loop_id, state.step, outputs, state.stop_reason)

    def abort(self, state: AudioState) -> None:
        self._finish(state, None)

    @classmethod
    def describe(cls, spec: LoopSpec) -> str:
        if spec.first_chunks:
            growth = "growing by playback slack" if spec.chunk_growth == "slack" else "doubling"
            firsts = ", ".join(map(str, spec.first_chunks)) + (", then" if len(spec.first_chunks) > 1 else "")
            text = f", chunk_codes {firsts} {growth} to {spec.chunk_codes}"
        else:
            text = f", chunk_codes {spec.chunk_codes}"
        if spec.first_audio_codes:
            text += f", first audio after {spec.first_audio_codes}"
        if spec.shared_first_codes and spec.chunk_codes:
            text += f", the first {spec.shared_first_codes} codes as one chunk beside other requests"
        elif spec.shared_first_chunks > 1 and spec.chunk_codes:
            text += f", the first {spec.shared_first_chunks} as one beside other requests"
        if spec.largest_when_slow and spec.chunk_codes:
            text += f", {spec.chunk_codes} after a chunk slower than its audio"
        return text

    def start_recording(self, state: AudioState, replay: Mapping[str, Sequence[int]] | None) -> None:
        record_audio(self, state, replay)

    def behaviour_settings(self, seed: int) -> dict[str, Any]:
        """What sized the chunks (the behaviour columns say what they were: some rules read the clock)."""
        spec = self.spec
        return {"chunk_codes": spec.chunk_codes, "first_chunk_codes": spec.first_chunk_codes,
                "chunk_growth": spec.chunk_growth, "first_audio_codes": spec.first_audio_codes,
                "shared_first_chunks": spec.shared_first_chunks, "shared_first_codes": spec.shared_first_codes,
                "largest_when_slow": spec.largest_when_slow, "noise_seed": seed}
