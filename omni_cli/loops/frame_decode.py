"""frame_decode: the vocoder over latent frames, one WorkUnit per chunk of a sentence's frames.

Chunks never cross a sentence: each sentence was made on its own, so its edges are real edges. A chunk
is decoded with `context_frames` more on each side (fewer at a sentence's edges) and keeps only its own
samples, or (a streaming vocoder, no context) with what the vocoder handed back from the sentence's previous
chunk; every sentence but the first starts with the voice's pause.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..backends.sentence_types import FRAME_CHUNK, DecodedChunk, FrameChunkInput, FrameVocoder, SentenceFrames
from ..spec.card import LoopSpec
from .audio_decode import AudioPiece
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
from .sentences import SentenceFeed


class AudioStream(Channel[AudioPiece]):
    """The decoder's chunks, handed to the channel's listeners (emit_audio) and not kept: an utterance of any
    length holds no more audio than its latest chunk."""

    def put(self, item: AudioPiece) -> None:
        super().put(item)
        self.items[-1] = None


@dataclass
class FrameDecodeState(LoopState):
    feed: SentenceFeed[SentenceFrames] | None = None
    sentence: int = 0  # the sentence being decoded
    next_frame: int = 0  # its first frame not decoded yet
    carry: object = None  # what the vocoder handed back with the sentence's latest chunk
    frames_done: int = 0  # frames of earlier sentences
    num_samples: int = 0


@register_loop_kind
class FrameDecodeLoop(Loop):
    kind = "frame_decode"
    work_unit = FRAME_CHUNK
    roles = ("vocoder",)
    reads, makes = "frame_feed", "audio_stream"
    output = AudioStream
    spec: LoopSpec
    component: FrameVocoder

    def init(self, feed: SentenceFeed, out: Channel, request: LoopRequest) -> FrameDecodeState:
        return FrameDecodeState(loop_id=self.loop_id, request_id=request.request_id, feed=feed, out=out)

    def footprint(self, state: FrameDecodeState, upstream: OutputBound) -> tuple[Footprint, OutputBound]:
        frames = self.component.chunk_size(1 << 16) + 2 * self.component.context_frames  # the largest chunk
        return Footprint(peak_step_bytes=self.component.step_bytes(frames)), NO_BOUND

    def next(self, state: FrameDecodeState) -> WorkPlan | Wait | Done:
        if state.status is LoopStatus.FINISHED:
            return DONE
        if state.feed.is_done(state.sentence):
            state.finish("end")
            return DONE
        piece = state.feed.item(state.sentence)
        if piece is None:
            state.status = LoopStatus.WAITING
            return Wait(state.feed.describe_wait)
        state.status = LoopStatus.RUNNING
        start = state.next_frame
        size = self.component.chunk_size(state.step)
        end = min(start + size, piece.num_frames)
        if piece.num_frames - end < size // 2:  # a short tail joins this chunk: its context costs more than it
            end = piece.num_frames
        context = self.component.context_frames
        lo, hi = max(0, start - context), min(piece.num_frames, end + context)
        last = end == piece.num_frames
        inputs = FrameChunkInput(piece.frames[:, lo:hi], start - lo, end - lo, state.carry, last)
        # chunks of equal width (with their context), each a sentence's first or not, last or not, run as one batch
        return WorkPlan(FRAME_CHUNK, state.step, (self.loop_id, FRAME_CHUNK, hi - lo, start == 0, last),
                        self.component.step_bytes(hi - lo), inputs)

    def advance(self, state: FrameDecodeState, plan: WorkPlan, decoded: DecodedChunk) -> FrameDecodeState:
        inputs: FrameChunkInput = plan.inputs
        output, state.carry = decoded.samples, decoded.carry
        if state.next_frame == 0 and state.sentence > 0:  # the pause between sentences
            output = np.concatenate([np.zeros(self.component.pause_samples, dtype=np.float32), output])
        state.next_frame += inputs.keep_end - inputs.keep_start
        state.out.put(AudioPiece(state.step, output))
        state.num_samples += int(output.shape[0])
        state.step += 1
        piece = state.feed.item(state.sentence)
        if state.next_frame >= piece.num_frames:
            state.feed.done_with(state.sentence)
            state.frames_done += piece.num_frames
            state.sentence += 1
            state.next_frame, state.carry = 0, None
            if state.feed.is_done(state.sentence):
                state.finish("end")
        return state

    def finalize(self, state: FrameDecodeState) -> LoopResult:
        return LoopResult(self.loop_id, state.step, {"num_samples": state.num_samples, "num_frames": state.frames_done,
                                                     "num_sentences": state.sentence}, state.stop_reason)
