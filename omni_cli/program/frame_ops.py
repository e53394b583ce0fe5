"""Node ops of a cascade whose talker makes multi-codebook frames (Qwen3-Omni): the talker -> vocoder hand-off."""

from __future__ import annotations

from typing import Any

from ..backends.base import ARItem, TalkerModel
from ..loops.channel import ARChannel
from ..loops.feeds import CodesFeed
from .ops import RequestContext, _op


class FramesFeed(CodesFeed):
    """talker -> vocoder: each frame the talker completed (every codebook group's code, in the item of the step
    that consumed the frame's first code), as a growing list. A frame whose first code was never consumed (codec
    EOS, or the last code before a length cap) has no item of its own and is not vocoded."""

    def __init__(self, talker: TalkerModel, upstream: ARChannel[ARItem], mode: str):
        super().__init__(talker, upstream, mode)
        self.codes: list[Any] = []

    def available(self) -> tuple[list[Any], bool] | None:
        if self.is_barrier and not self.upstream.is_closed:
            return None
        items = self.upstream.items
        while self._seen < len(items):
            frame = items[self._seen].extra
            if frame is not None:
                self.codes.append(frame)
            self._seen += 1
        return self.codes, self.upstream.is_closed

    def describe_wait(self) -> str:
        return f"{self.upstream.name}: {len(self.codes)} frames ({'barrier' if self.is_barrier else 'stream'})"


@_op("talker_frames_to_vocoder", reads=("ar_stream@talker",), makes="codes_feed@vocoder", handoff=True, frames=True,
     counts="codec_tokens")
def talker_frames_to_vocoder(ctx: RequestContext, inputs: list[Any], mode: str) -> FramesFeed:
    """The talker's completed codec frames (every codebook group) as the vocoder's input."""
    return FramesFeed(ctx.roles["talker"], inputs[0], mode)
