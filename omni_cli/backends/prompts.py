"""What the loops hand a thinker: prompts of token ids, a conversation's turns, the media slots between them, and
the rows a picture becomes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class Prefill:
    """What a prefill WorkUnit consumes: token ids (also the history for repetition penalty)."""

    token_ids: list[int]
    payload: Any = None  # backend-specific, when the input is not plain tokens (talker embeddings, heard audio)
    is_last: bool = True  # a chunked prefill (audio encoded while it arrives) has parts; the last one samples


@dataclass
class ThinkerPrompt:
    """What the tokenize op hands the thinker loop."""

    prefill_ids: list[int]  # consumed by the prefill WorkUnit
    forced_ids: list[int] | None  # echo mode: the reply is forced to these tokens (EOS excluded)
    forced_end_id: int | None = None  # echo mode: the token forced after them (None: min(eos_token_ids))


@dataclass(frozen=True)
class PromptTurn:
    """One turn of a conversation as the thinker's chat template renders it: its pictures, its videos, its heard
    clips, then its text (the processor's order for image, video, audio and text parts)."""

    role: str  # user | assistant
    text: str
    num_clips: int = 0
    num_images: int = 0
    num_videos: int = 0


@dataclass
class ListenPrompt:
    """A conversation around seen images and heard audio: `pieces` of ids with a media slot between each two, in
    order (`slots`: "image", "video" or "audio"; the k-th audio slot is the conversation's k-th clip, the k-th
    image or video slot its k-th seen item, pictures and videos counted together); a slot's positions are its encoder's rows, each position the placeholder `image_id` or
    `audio_id`; the last piece ends with the assistant's header. One turn without images: before_ids, the audio,
    after_ids."""

    before_ids: list[int]
    after_ids: list[int]
    audio_id: int  # the placeholder token of an audio position (its row comes from the audio encoder)
    image_id: int = -1  # ... of an image position (its row comes from the image encoder)
    pieces: list[list[int]] | None = None  # None: [before_ids, after_ids] around one audio slot (or none)
    slots: list[str] | None = None
    video_id: int = -1  # ... of a video position (a "video" slot: its rows come from the image encoder too)

    def layout(self) -> tuple[list[list[int]], list[str]]:
        """(pieces, slots), len(pieces) == len(slots) + 1."""
        if self.pieces is not None:
            return self.pieces, list(self.slots or [])
        return [self.before_ids, self.after_ids], ["audio"]


@dataclass
class ImageInput:
    """One request's picture for the image encoder: a SeenImage (audio/seen.py), the request's `index`-th."""

    image: Any
    index: int


@dataclass
class ImageRows:
    """An image's (or a video's) rows as the thinker's input, and their grid in thinker positions (t, h, w):
    t * h * w rows, in row-major order; a thinker with multimodal RoPE places row (i, j, k) at position offsets
    (i * its time positions for `seconds_per_step` seconds, j, k)."""

    rows: Any  # [t * h * w, thinker width] (backend-native array)
    grid: tuple[int, int, int]
    seconds_per_step: float = 1.0  # a picture's grid steps are one second apart; a video's, its frame groups'
