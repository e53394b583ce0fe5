"""audio_encode: the request's speech through an audio encoder, one WorkUnit per encoder block as it arrives."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from ..backends.base import AUDIO_BLOCK, AudioBlockInput, AudioBlockOutput, AudioEncoderModel
from ..spec.card import LoopSpec
from .base import (
    DONE,
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
from .kept import Reuse, clip_kept, whole_clip
from .registry import register_loop_kind


@dataclass(frozen=True)
class HeardBlock:
    """One encoded block: its rows are the thinker's input at as many audio positions (backend-native array)."""

    index: int
    rows: Any
    num_samples: int  # the block's samples at the encoder's rate
    clip: int = 0  # which of the request's clips (a conversation's earlier turns' first, this turn's last)
    ends_clip: bool = True  # the clip's last block (else a later clip's block, or the channel's close, says so)


@dataclass
class EncodeState(LoopState):
    clips: tuple = ()  # AudioSources (audio/source.py), in prompt order; empty: the request carries no audio
    encoder_state: Any = None
    clip: int = 0  # the clip being encoded
    block: int = 0  # the next block within it
    blocks: list = field(default_factory=list)  # the clip's blocks so far, kept on it once it has ended
    num_reused: int = 0  # clips heard before (an earlier turn) whose kept blocks were published again
    reuse: Reuse = field(default_factory=Reuse)  # the request's store of encodings kept across runs
    num_samples: int = 0
    num_rows: int = 0

    def release(self) -> None:
        self.encoder_state = None


class AudioInputError(ValueError):
    """The request's audio cannot be heard: longer than the encoder's `max_seconds`, or its stream broke."""


@register_loop_kind
class AudioEncodeLoop(Loop):
    """Block k of a clip covers samples [k * block_samples, (k + 1) * block_samples) at the encoder's rate. Its
    WorkUnit is planned as soon as block k-1 is done; its read waits in the component for the audio still on its
    way, so a block is encoded when its last sample arrives and what follows it (the thinker's prefill of the rows)
    runs at once. A clip's last block is the one its audio ends inside; the clips of a conversation are encoded
    one after the other, each with a fresh encoder state (as each is a clip of its own to the processor)."""

    kind = "audio_encode"
    work_unit = AUDIO_BLOCK
    roles = ("audio_encoder",)
    reads, makes = "audio", "audio_rows"
    output = Channel
    spec: LoopSpec
    component: AudioEncoderModel

    def init(self, feed: Any, out: Channel, request: LoopRequest) -> EncodeState:
        clips = tuple(feed) if isinstance(feed, (tuple, list)) else () if feed is None else (feed,)
        state = EncodeState(loop_id=self.loop_id, request_id=request.request_id, clips=clips, out=out,
                            reuse=Reuse(request.keep_encoded))
        if not clips:
            state.finish("no_audio")
        else:
            state.encoder_state = self.component.new_state()
        return state

    def footprint(self, state: EncodeState, upstream: OutputBound) -> tuple[Footprint, OutputBound]:
        most = len(state.clips) * self.component.tokens_for(self.component.max_samples)
        return Footprint(peak_step_bytes=self.component.step_bytes(self.component.block_samples)), OutputBound(most)

    def next(self, state: EncodeState) -> WorkPlan | Wait | Done:
        c = self.component
        while state.status is not LoopStatus.FINISHED:
            source = state.clips[state.clip]
            kept = self._kept(state, source) if state.block == 0 else None
            if kept is not None:  # encoded in an earlier turn (or run): its blocks again, no WorkUnit
                for block in kept:
                    state.out.put(replace(block, clip=state.clip))
                state.num_rows += sum(len(b.rows) for b in kept)
                state.num_reused += 1
                self._end_clip(state, source, keep=False)
                continue
            start = state.block * c.block_samples
            arrived, ended = source.known(c.sample_rate)
            if ended and arrived <= start:  # it ended on a block's edge after its last block ran
                self._end_clip(state, source)
                continue
            if start >= c.max_samples:
                raise AudioInputError(f"the audio is longer than the encoder's {c.max_samples / c.sample_rate:g} s")
            state.status = LoopStatus.RUNNING
            inputs = AudioBlockInput(state.encoder_state, source, state.block, start, start + c.block_samples)
            return WorkPlan(AUDIO_BLOCK, state.step, (self.loop_id, AUDIO_BLOCK), c.step_bytes(c.block_samples),
                            inputs)
        return DONE

    def advance(self, state: EncodeState, plan: WorkPlan, output: AudioBlockOutput) -> EncodeState:
        state.step += 1
        state.block += 1
        state.num_samples += output.num_samples
        state.num_rows += len(output.rows)
        source, c = state.clips[state.clip], self.component
        arrived, ended = source.known(c.sample_rate)
        # the audio ended inside this block, or (a whole clip) at its edge
        ends = output.num_samples < c.block_samples or (ended and arrived <= state.block * c.block_samples)
        self._publish(state, HeardBlock(plan.inputs.index, output.rows, output.num_samples, state.clip, ends))
        if ends:
            self._end_clip(state, source)
        return state

    def _kept(self, state: EncodeState, source: Any) -> list | None:
        """The clip's blocks as an earlier turn of this process kept them, else as the request's store did."""
        kept = source.encoded.get(self._key())
        if kept is not None or state.reuse.store is None or state.clip in state.reuse.looked:
            return kept
        whole = whole_clip(source, self.component.sample_rate)  # None: still arriving, not looked up
        if whole is None:
            return None
        state.reuse.looked.add(state.clip)
        found = state.reuse.look_up(self.component, whole[0])
        if found is None:
            return None
        ends = found.extra.get("ends") or [i == len(found.rows) - 1 for i in range(len(found.rows))]
        kept = [HeardBlock(i, self.component.rows_from_numpy(rows), n, state.clip, bool(end))
                for i, (rows, n, end) in enumerate(zip(found.rows, found.num_samples, ends, strict=True))]
        source.encoded[self._key()] = kept
        state.reuse.clips += 1
        state.reuse.audio_s += whole[1]
        return kept

    def _key(self) -> tuple:
        return (self.component.name, id(self.component))  # blocks are kept for this encoder only

    def _publish(self, state: EncodeState, block: HeardBlock) -> None:
        state.blocks.append(block)
        state.out.put(block)

    def _end_clip(self, state: EncodeState, source: Any, keep: bool = True) -> None:
        if source.error is not None:
            raise AudioInputError(f"the audio stopped early: {source.error}")
        if keep:  # the whole clip was heard: a later turn of the conversation reuses its blocks
            source.encoded[self._key()] = state.blocks
            if state.reuse.store is not None:  # and a later run, once this request has ended
                state.reuse.to_keep.append((source, state.blocks))
        state.blocks = []
        state.clip += 1
        state.block = 0
        if state.clip == len(state.clips):
            state.finish("end")
        else:
            state.encoder_state = self.component.new_state()

    def finalize(self, state: EncodeState) -> LoopResult:
        if state.stop_reason == "end":
            self._keep(state.reuse)
        seconds = state.num_samples / self.component.sample_rate
        return LoopResult(self.loop_id, state.step, {"audio_s": seconds, "audio_positions": state.num_rows,
                                                     "clips": state.clip, "clips_reused": state.num_reused,
                                                     **state.reuse.outputs()}, state.stop_reason)

    def _keep(self, reuse: Reuse) -> None:
        """The clips this request encoded, into its store under their content's digest."""
        made = []
        for source, blocks in reuse.to_keep:
            whole = whole_clip(source, self.component.sample_rate)
            if whole is not None:
                made.append((whole[0], clip_kept(self.component, blocks)))
        reuse.to_keep = made
        reuse.write(self.component)
