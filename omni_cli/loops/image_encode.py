"""image_encode: the request's pictures and videos through a vision encoder, one WorkUnit per picture or video."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..backends.base import IMAGE, ImageEncoderModel, ImageInput, ImageRows
from ..spec import SpecError, SpecIssue
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
from .kept import Reuse, picture_content, picture_kept
from .registry import register_loop_kind


@dataclass
class ImageEncodeState(LoopState):
    images: tuple = ()  # SeenImage (audio/seen.py), SeenVideo (audio/watched.py), in the order the thinker reads them
    num_rows: int = 0
    index: int = 0  # the next picture (WorkUnits run for those not taken from the store)
    reuse: Reuse = field(default_factory=Reuse)  # the request's store of encodings kept across runs


@dataclass(frozen=True)
class SeenRows:
    """One encoded picture: its rows and their grid of thinker positions."""

    index: int
    image: ImageRows


@register_loop_kind
class ImageEncodeLoop(Loop):
    """A picture (or a video) is one WorkUnit, not one per attention window: Qwen2.5-Omni's vision tower has
    full-attention layers (`fullatt_block_indexes`) in which every patch sees the whole picture, so a window encoded
    alone is not the picture's rows for it; each picture attends only to itself, so one encoded alone equals it
    encoded beside others (tests/hf/test_hf_see.py checks both). A video's frame groups attend only within
    themselves, so a group could be a WorkUnit, but the thinker places a video's rows as one part of its prompt
    (tests/hf/test_hf_watch.py)."""

    kind = "image_encode"
    work_unit = IMAGE
    roles = ("image_encoder",)
    reads, makes = "images", "image_rows"
    output = Channel
    spec: LoopSpec
    component: ImageEncoderModel

    def init(self, feed: Any, out: Channel, request: LoopRequest) -> ImageEncodeState:
        images = tuple(feed or ())
        if len(images) > self.component.max_images:
            raise SpecError([SpecIssue("<request>", None, "images", f"{len(images)} images; the image encoder "
                                       f"takes at most {self.component.max_images}")])
        state = ImageEncodeState(loop_id=self.loop_id, request_id=request.request_id, images=images, out=out,
                                 reuse=Reuse(request.keep_encoded))
        if not images:
            state.finish("no_images")
        return state

    def footprint(self, state: ImageEncodeState, upstream: OutputBound) -> tuple[Footprint, OutputBound]:
        c = self.component
        peak = max((self._step_bytes(item) for item in state.images), default=0)
        rows = sum(c.video_rows(*item.size, item.num_frames, item.fps) if item.kind == "video" else c.max_rows()
                   for item in state.images)
        return Footprint(peak_step_bytes=peak), OutputBound(rows)

    def next(self, state: ImageEncodeState) -> WorkPlan | Wait | Done:
        while state.status is not LoopStatus.FINISHED:
            image = state.images[state.index]
            if image.kind == "image" and state.reuse.store is not None and state.index not in state.reuse.looked:
                state.reuse.looked.add(state.index)
                kept = state.reuse.look_up(self.component, picture_content(image))
                if kept is not None:  # seen in an earlier run: its rows again, no WorkUnit
                    state.reuse.images += 1
                    rows = self.component.rows_from_numpy(kept.rows[0])
                    self._publish(state, ImageRows(rows, tuple(kept.extra["grid"])))
                    continue
            state.status = LoopStatus.RUNNING
            return WorkPlan(IMAGE, state.step, (self.loop_id, IMAGE), self._step_bytes(image),
                            ImageInput(image, state.index))
        return DONE

    def _step_bytes(self, item: Any) -> int:
        if item.kind == "video":
            return self.component.video_step_bytes(*item.size, item.num_frames, item.fps)
        return self.component.step_bytes(*item.size)

    def advance(self, state: ImageEncodeState, plan: WorkPlan, output: ImageRows) -> ImageEncodeState:
        state.step += 1
        # kept once the request has ended (a video is not kept: a conversation holds no videos yet)
        if state.reuse.store is not None and state.images[state.index].kind == "image":
            state.reuse.to_keep.append((state.images[state.index], output))
        self._publish(state, output)
        return state

    def _publish(self, state: ImageEncodeState, rows: ImageRows) -> None:
        state.num_rows += len(rows.rows)
        state.out.put(SeenRows(state.index, rows))
        state.index += 1
        if state.index == len(state.images):
            state.finish("end")

    def finalize(self, state: ImageEncodeState) -> LoopResult:
        if state.stop_reason == "end":
            reuse = state.reuse
            reuse.to_keep = [(picture_content(i), picture_kept(self.component, o)) for i, o in reuse.to_keep]
            reuse.write(self.component)
        return LoopResult(self.loop_id, state.step, {"images": state.index, "image_positions": state.num_rows,
                                                     **state.reuse.outputs()}, state.stop_reason)
