"""The thinker's input for a chat turn that may hold seen images and heard audio: its prefill comes in parts."""

from __future__ import annotations

from ..backends.base import ListenPrompt, Prefill
from .base import NO_BOUND, OutputBound
from .channel import Channel
from .feeds import ARFeed, StepFeed


class ListenFeed(ARFeed):
    """Parts, in the prompt's order: each piece of ids; each image (its rows, at image positions, once encoded);
    one part per encoded audio block (its rows, each at an audio position); then, once the encoders' channels
    closed, the ids after the audio (the last part, whose logits give the first reply token). `stream` hands
    each block and picture over as it is encoded (the prefill keeps pace with the speaker); `barrier` waits for
    a channel to close before any of its rows. Both prefill the same positions with the same rows."""

    def __init__(self, prompt: ListenPrompt, heard: Channel | None, mode: str, max_audio_rows: int,
                 max_tokens: int | None = None, seen: Channel | None = None, max_image_rows: int = 0):
        self.prompt = prompt
        self.pieces, self.slots = prompt.layout()
        self.heard = heard  # None: a turn without audio
        self.seen = seen  # None: a turn without images
        if heard is None:
            self.pieces, self.slots = _without_audio(self.pieces, self.slots)
        self.is_barrier = mode == "barrier"
        self.max_audio_rows = max_audio_rows
        self.max_image_rows = max_image_rows
        self._max_tokens = max_tokens

    def max_tokens(self) -> int | None:
        return self._max_tokens

    def prefill(self) -> Prefill | None:
        return self.prefill_part(0)

    def prefill_part(self, done: int) -> Prefill | None:
        pos, images = done, 0
        for k, piece in enumerate(self.pieces):
            if pos < len(piece):
                return Prefill(piece[pos:], is_last=k == len(self.slots))
            pos -= len(piece)
            if k == len(self.slots):
                return None
            if self.slots[k] == "image":
                part, pos = self._image_part(images, pos)
                images += 1
            else:
                part, pos = self._audio_part(pos)
            if part is not None or pos < 0:
                return part
        return None

    def _image_part(self, index: int, pos: int) -> tuple[Prefill | None, int]:
        """(the part that starts at `pos` within picture `index`, or None: wait), or (None, pos past it)."""
        seen = self.seen
        if seen is None or len(seen.items) <= index or (self.is_barrier and not seen.is_closed):
            return None, -1
        image = seen.items[index].image
        n = len(image.rows)
        if pos == 0 and n:
            return Prefill([self.prompt.image_id] * n, payload=image, is_last=False), 0
        return None, pos - n

    def _audio_part(self, pos: int) -> tuple[Prefill | None, int]:
        heard = self.heard
        if self.is_barrier and not heard.is_closed:
            return None, -1
        for block in heard.items:
            n = len(block.rows)
            if n == 0:
                continue
            if pos == 0:
                return Prefill([self.prompt.audio_id] * n, payload=block.rows, is_last=False), 0
            pos -= n
        if not heard.is_closed:
            return None, -1
        return None, pos

    def step(self, step: int) -> StepFeed:
        return StepFeed()

    def prefill_is_known(self) -> bool:
        return not self.slots

    def prefill_bound(self, upstream: OutputBound = NO_BOUND) -> int:
        media = sum(self.max_image_rows if slot == "image" else self.max_audio_rows for slot in self.slots)
        return sum(len(p) for p in self.pieces) + media

    def describe_wait(self) -> str:
        said = []
        for channel, what in ((self.seen, "images"), (self.heard, "blocks")):
            if channel is not None:
                state = "closed" if channel.is_closed else "open"
                said.append(f"{channel.name}: {len(channel)} {what} ({state}, "
                            f"{'barrier' if self.is_barrier else 'stream'})")
        return "; ".join(said) or "prompt"


def _without_audio(pieces: list[list[int]], slots: list[str]) -> tuple[list[list[int]], list[str]]:
    """A turn without audio: an audio slot (and nothing else) stands between two pieces; they join."""
    if "audio" not in slots:
        return pieces, slots
    k = slots.index("audio")
    return [*pieces[:k], pieces[k] + pieces[k + 1], *pieces[k + 2:]], slots[:k] + slots[k + 1:]
