"""What the input loops take from, and give to, an EncodedStore (omni_cli/encoded.py): whole clips and pictures."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..encoded import Kept, audio_content, identity_key, image_content


@dataclass
class Reuse:
    """One request's reuse of an encoder's kept outputs: what came from the store, what goes to it at the end."""

    store: Any = None  # the request's EncodedStore, or None: nothing kept past this process
    clips: int = 0  # clips published from the store, without a WorkUnit
    audio_s: float = 0.0
    images: int = 0
    to_keep: list = field(default_factory=list)  # (content, Kept) made this run, written once the request ends
    looked: set = field(default_factory=set)  # the inputs (by index) already looked up: a plan asked for again
    # (not admitted yet) does not hash its input and read the store again
    notes: list = field(default_factory=list)  # one line each: an entry refused, a store that could not be used

    def outputs(self) -> dict[str, Any]:
        """The loop's outputs about reuse (none for a request with no store)."""
        if self.store is None:
            return {}
        reused = {"clips": self.clips, "audio_s": self.audio_s} if self.clips else {}
        if self.images:
            reused["images"] = self.images
        return {"reused": reused, "notes": list(self.notes)}

    def look_up(self, component: Any, content: str) -> Kept | None:
        kept, note = self.store.get(identity_key(component.identity()), content)
        if note:
            self.notes.append(note)
        return kept

    def write(self, component: Any) -> None:
        """Keep what this request encoded (after its reply: off the path to the first audio)."""
        if self.store is None or not self.to_keep:
            return
        identity = identity_key(component.identity())
        for content, kept in self.to_keep:
            note = self.store.put(identity, content, kept)
            if note:
                self.notes.append(note)
                break
        self.to_keep = []


def whole_clip(source: Any, rate: int) -> tuple[str, float] | None:
    """(the content digest, seconds) of a clip that has arrived whole and unbroken, else None."""
    arrived, ended = source.known(rate)
    if not ended or source.error is not None:
        return None
    return audio_content(source.read(rate, 0, arrived), rate), arrived / rate


def clip_kept(component: Any, blocks: list) -> Kept:
    """A clip's published blocks as a store entry (rows as float32, exactly)."""
    return Kept(tuple(component.rows_to_numpy(b.rows) for b in blocks), tuple(b.num_samples for b in blocks),
                {"ends": [bool(b.ends_clip) for b in blocks]})


def picture_kept(component: Any, rows: Any) -> Kept:
    return Kept((component.rows_to_numpy(rows.rows),), (), {"grid": list(rows.grid)})


def picture_content(image: Any) -> str:
    return image_content(image.pixels)
