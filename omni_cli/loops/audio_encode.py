"""audio_encode: the request's speech through an audio encoder, one WorkUnit per encoder block as it arrives."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..backends.base import AUDIO_BLOCK, AudioBlockInput, AudioBlockOutput, AudioEncoderModel
from ..spec.card import LoopSpec
from .base import DONE, Done, Footprint, Loop, LoopRequest, LoopResult, LoopState, LoopStatus, OutputBound, Wait, WorkPlan
from .channel import Channel
from .registry import register_loop_kind


@dataclass(frozen=True)
class HeardBlock:
    """One encoded block: its rows are the thinker's input at as many audio positions (backend-native array)."""

    index: int
    rows: Any
    num_samples: int  # the block's samples at the encoder's rate


@dataclass
class EncodeState(LoopState):
    source: Any = None  # an AudioSource (audio/source.py); None: the request carries no audio
    out: Channel | None = None
    encoder_state: Any = None
    num_samples: int = 0
    num_rows: int = 0
    stop_reason: str | None = None


class AudioInputError(ValueError):
    """The request's audio cannot be heard: longer than the encoder's `max_seconds`, or its stream broke."""


@register_loop_kind
class AudioEncodeLoop(Loop):
    """Block k covers samples [k * block_samples, (k + 1) * block_samples) at the encoder's rate. Its WorkUnit is
    planned as soon as block k-1 is done; its read waits in the component for the audio still on its way, so a
    block is encoded when its last sample arrives and what follows it (the thinker's prefill of the rows) runs
    at once. The last block is the one the audio ends inside; an ended stream plans nothing more."""

    kind = "audio_encode"
    work_unit = AUDIO_BLOCK
    roles = ("audio_encoder",)
    reads, makes = "audio", "audio_rows"
    output = Channel
    spec: LoopSpec
    component: AudioEncoderModel

    def init(self, feed: Any, out: Channel, request: LoopRequest) -> EncodeState:
        state = EncodeState(loop_id=self.loop_id, request_id=request.request_id, source=feed, out=out)
        if feed is None:
            self._finish(state, "no_audio")
        else:
            state.encoder_state = self.component.new_state()
        return state

    def footprint(self, state: EncodeState, upstream: OutputBound) -> tuple[Footprint, OutputBound]:
        most = self.component.tokens_for(self.component.max_samples) if state.source is not None else 0
        return Footprint(peak_step_bytes=self.component.step_bytes(self.component.block_samples)), OutputBound(most)

    def next(self, state: EncodeState) -> WorkPlan | Wait | Done:
        if state.status is LoopStatus.FINISHED:
            return DONE
        c = self.component
        start = state.step * c.block_samples
        arrived, ended = state.source.known(c.sample_rate)
        if ended and arrived <= start:
            if state.source.error is not None:
                raise AudioInputError(f"the audio stopped early: {state.source.error}")
            self._finish(state, "end")
            return DONE
        if start >= c.max_samples:
            raise AudioInputError(f"the audio is longer than the encoder's {c.max_samples / c.sample_rate:g} s")
        state.status = LoopStatus.RUNNING
        inputs = AudioBlockInput(state.encoder_state, state.source, state.step, start, start + c.block_samples)
        return WorkPlan(AUDIO_BLOCK, state.step, (self.loop_id, AUDIO_BLOCK), c.step_bytes(c.block_samples), inputs)

    def advance(self, state: EncodeState, plan: WorkPlan, output: AudioBlockOutput) -> EncodeState:
        state.step += 1
        state.num_samples += output.num_samples
        state.num_rows += len(output.rows)
        state.out.put(HeardBlock(plan.step, output.rows, output.num_samples))
        if output.num_samples < self.component.block_samples:  # the audio ended inside this block
            if state.source.error is not None:
                raise AudioInputError(f"the audio stopped early: {state.source.error}")
            self._finish(state, "end")
        return state

    def _finish(self, state: EncodeState, reason: str | None) -> None:
        state.status = LoopStatus.FINISHED
        state.stop_reason = reason
        state.encoder_state = None
        state.out.close()

    def finalize(self, state: EncodeState) -> LoopResult:
        seconds = state.num_samples / self.component.sample_rate
        return LoopResult(self.loop_id, state.step, {"audio_s": seconds, "audio_positions": state.num_rows},
                          state.stop_reason)

    def abort(self, state: EncodeState) -> None:
        self._finish(state, None)
