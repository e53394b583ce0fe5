"""The thinker's input for a chat turn (and the conversation before it) that may hold seen images and heard
audio: its prefill comes in parts."""

from __future__ import annotations

from ..backends.base import ListenPrompt, Prefill
from .base import NO_BOUND, OutputBound
from .channel import Channel
from .feeds import ARFeed, StepFeed


class ListenFeed(ARFeed):
    """Parts, in the prompt's order: each piece of ids; each picture or video (its rows, at image or video
    positions, once encoded); one part per encoded block of each clip (its rows, each at an audio position); the
    last piece (whose logits give the first reply token). The k-th image or video slot is the k-th item of the
    `seen` channel (pictures and videos counted together), the k-th audio
    slot the blocks of clip k on the `heard` channel (a conversation's earlier clips first, this turn's last).
    `stream` hands each block and picture over as it is encoded (the prefill keeps pace with the speaker);
    `barrier` waits for a channel to close before any of its rows. Both prefill the same positions with the same
    rows."""

    def __init__(self, prompt: ListenPrompt, heard: Channel | None, mode: str, max_audio_rows: int,
                 max_tokens: int | None = None, seen: Channel | None = None, max_seen_rows: int = 0):
        self.prompt = prompt
        self.pieces, self.slots = prompt.layout()
        self.heard = heard  # None: no clip in the conversation
        self.seen = seen  # None: no picture or video in the conversation
        self.is_barrier = mode == "barrier"
        self.max_audio_rows = max_audio_rows  # every clip's, together
        self.max_seen_rows = max_seen_rows  # every picture's and video's, together
        self._max_tokens = max_tokens

    def max_tokens(self) -> int | None:
        return self._max_tokens

    def prefill(self) -> Prefill | None:
        return self.prefill_part(0)

    def prefill_part(self, done: int) -> Prefill | None:
        pos, counts = done, {"seen": 0, "audio": 0}
        for k, piece in enumerate(self.pieces):
            if pos < len(piece):
                return Prefill(piece[pos:], is_last=k == len(self.slots))
            pos -= len(piece)
            if k == len(self.slots):
                return None
            slot = self.slots[k]
            key = "audio" if slot == "audio" else "seen"  # pictures and videos share the seen channel, in order
            index = counts[key]
            counts[key] += 1
            part, pos = self._audio_part(index, pos) if slot == "audio" else self._image_part(index, pos, slot)
            if part is not None or pos < 0:
                return part
        return None

    def _image_part(self, index: int, pos: int, slot: str) -> tuple[Prefill | None, int]:
        """(the part that starts at `pos` within seen item `index`, 0), (None, -1): wait, or (None, pos past it);
        a video's positions hold the video placeholder."""
        seen = self.seen
        if seen is None or len(seen.items) <= index or (self.is_barrier and not seen.is_closed):
            return None, -1
        image = seen.items[index].image
        n = len(image.rows)
        if pos == 0 and n:
            placeholder = self.prompt.video_id if slot == "video" else self.prompt.image_id
            return Prefill([placeholder] * n, payload=image, is_last=False), 0
        return None, pos - n

    def _audio_part(self, clip: int, pos: int) -> tuple[Prefill | None, int]:
        """As _image_part, for the blocks of clip `clip`: it is over once a later clip's block came, or its own
        last block, or the channel closed."""
        heard = self.heard
        if heard is None or (self.is_barrier and not heard.is_closed):
            return None, -1
        blocks = heard.items
        ended = heard.is_closed or any(b.clip > clip for b in blocks)
        for block in blocks:
            if block.clip != clip:
                continue
            n = len(block.rows)
            if n and pos == 0:
                return Prefill([self.prompt.audio_id] * n, payload=block.rows, is_last=False), 0
            pos -= n
            ended = ended or block.ends_clip
        if not ended:
            return None, -1
        return None, pos

    def step(self, step: int) -> StepFeed:
        return StepFeed()

    def prefill_is_known(self) -> bool:
        return not self.slots

    def prefill_bound(self, upstream: OutputBound = NO_BOUND) -> int:
        audio = self.max_audio_rows if "audio" in self.slots else 0
        return sum(len(p) for p in self.pieces) + self.max_seen_rows + audio

    def describe_wait(self) -> str:
        said = []
        for channel, what in ((self.seen, "images and videos"), (self.heard, "blocks")):
            if channel is not None:
                state = "closed" if channel.is_closed else "open"
                said.append(f"{channel.name}: {len(channel)} {what} ({state}, "
                            f"{'barrier' if self.is_barrier else 'stream'})")
        return "; ".join(said) or "prompt"
