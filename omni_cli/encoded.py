"""Encoder outputs kept across runs: a clip's (or a picture's) rows, under its content's digest and the encoder's.

`omni chat --history FILE` hears every earlier turn again on each run. An `EncodedStore` keeps what an audio or
image encoder made for a whole clip or picture in omni's cache (`cache_dir("encoded")`, omni_cli/cache.py), so a
later run publishes the same rows without a WorkUnit. An entry's name is made of two digests:

- the encoder's **identity**: what its rows depend on besides the input (its weights' digest or the seed that
  drew them, its settings, the feature extractor's, the dtype, the device type, the library versions);
- the input's **content**: the samples at the encoder's own rate (or the picture's pixels).

So another model, dtype or feature extractor never reads these rows, and the entry records both digests
again inside, checked on every read. The cache trusts only what it wrote: a file another user owns or others
may write, one without its digest or whose bytes no longer match it (cut short, edited, planted) is removed and
the clip encoded again, with one note saying which file and why. Rows are kept as float32 (exact for float32,
bfloat16 and float16 encoders). The whole store is bounded: past `cap_bytes` the entries used longest ago go
first (a hit counts as a use), and an entry over a quarter of the cap is not kept.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from . import cache

FOLDER = "encoded"
CAP_ENV = "OMNI_CLI_ENCODED_CACHE_MIB"  # 0 turns the store off
DEFAULT_CAP_MIB = 256
FORMAT = 1  # bump when what an entry holds, or how it is read, changes


@dataclass(frozen=True)
class Kept:
    """One whole clip's (or picture's) encoding: its blocks' rows (float32), their samples, and facts beside."""

    rows: tuple[np.ndarray, ...]
    num_samples: tuple[int, ...] = ()  # per block (audio); empty for a picture
    extra: dict = field(default_factory=dict)  # e.g. a picture's grid

    @property
    def nbytes(self) -> int:
        return sum(r.nbytes for r in self.rows)


def identity_key(identity: dict) -> str:
    """The digest an encoder's identity is filed under."""
    text = json.dumps({"format": FORMAT, **identity}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def audio_content(samples: np.ndarray, sample_rate: int) -> str:
    """The digest of a whole clip as its encoder reads it (mono float32 at the encoder's rate)."""
    digest = hashlib.sha256(f"audio\0{sample_rate}\0{len(samples)}\0".encode())
    digest.update(np.ascontiguousarray(samples, dtype=np.float32).tobytes())
    return digest.hexdigest()


def image_content(pixels: np.ndarray) -> str:
    """The digest of a picture's RGB pixels (and their shape)."""
    array = np.ascontiguousarray(pixels, dtype=np.uint8)
    digest = hashlib.sha256(f"image\0{array.shape}\0".encode())
    digest.update(array.tobytes())
    return digest.hexdigest()


class EncodedStore:
    """Kept encodings in `root` (default: the cache's `encoded` folder), at most `cap_bytes` in all (default:
    $OMNI_CLI_ENCODED_CACHE_MIB MiB, else 256 MiB). Reads and writes never raise: what goes wrong is a note."""

    def __init__(self, root: Path | None = None, cap_bytes: int | None = None):
        self.root = root
        self.cap_bytes = default_cap_bytes() if cap_bytes is None else int(cap_bytes)

    @property
    def enabled(self) -> bool:
        return self.cap_bytes > 0

    def _folder(self, identity: str) -> Path:
        return cache.cache_dir(FOLDER, identity, root=self.root or None)

    def get(self, identity: str, content: str) -> tuple[Kept | None, str | None]:
        """(the kept encoding, None), or (None, a note) when a file was there but could not be trusted (it is
        removed, and the clip encoded again), or (None, None) when nothing was kept."""
        if not self.enabled:
            return None, None
        try:
            path = self._folder(identity) / f"{content[:48]}.npz"
        except (cache.CacheRefused, OSError) as error:
            return None, f"encoder outputs are not reused: {_reason(error)}"
        data, why = cache.read_owned(path)
        if data is None:
            if why is None:
                return None, None
            _drop(path)
            return None, f"encoded again: the cached {path} was not used ({why})"
        kept = _parse(data, identity, content)
        if kept is None:
            _drop(path)
            return None, f"encoded again: the cached {path} is not an encoding of this clip by this encoder"
        try:
            os.utime(path)  # a use: the oldest-first eviction keeps what is heard again
        except OSError:
            pass
        return kept, None

    def put(self, identity: str, content: str, kept: Kept) -> str | None:
        """Keep `kept`; a note when it could not be (the next run then encodes it again)."""
        if not self.enabled or kept.nbytes > self.cap_bytes // 4:
            return None
        try:
            folder = self._folder(identity)
            cache.write_artifact(folder / f"{content[:48]}.npz", _serialize(identity, content, kept))
            self.evict()
        except (cache.CacheRefused, OSError) as error:
            return f"encoder outputs could not be kept: {_reason(error)}"
        return None

    def evict(self) -> None:
        """Remove the entries used longest ago until the store is within its cap."""
        top = (self.root or cache.cache_root()) / FOLDER
        entries = []
        for path in top.glob("*/*.npz"):
            try:
                info = path.stat()
                entries.append((info.st_mtime_ns, info.st_size, path))
            except OSError:
                continue
        total = sum(size for _, size, _ in entries)
        for _, size, path in sorted(entries):
            if total <= self.cap_bytes:
                break
            cache.discard(path)
            total -= size


def default_cap_bytes() -> int:
    """$OMNI_CLI_ENCODED_CACHE_MIB (0: keep nothing), else DEFAULT_CAP_MIB; a value that is not a whole number
    of MiB is taken as the default."""
    raw = os.environ.get(CAP_ENV, "").strip()
    try:
        mib = int(raw) if raw else DEFAULT_CAP_MIB
    except ValueError:
        mib = DEFAULT_CAP_MIB
    return max(0, mib) << 20


def _serialize(identity: str, content: str, kept: Kept) -> bytes:
    meta = {"format": FORMAT, "identity": identity, "content": content, "num_samples": list(kept.num_samples),
            "extra": kept.extra, "blocks": len(kept.rows)}
    arrays = {"meta": np.frombuffer(json.dumps(meta).encode(), np.uint8)}
    arrays.update({f"rows_{i}": np.ascontiguousarray(r, dtype=np.float32) for i, r in enumerate(kept.rows)})
    out = io.BytesIO()
    np.savez(out, **arrays)
    return out.getvalue()


def _parse(data: bytes, identity: str, content: str) -> Kept | None:
    """The entry's encoding if it says it is `content` under `identity` and is whole; else None."""
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as archive:
            meta = json.loads(archive["meta"].tobytes().decode())
            if meta.get("format") != FORMAT or meta.get("identity") != identity or meta.get("content") != content:
                return None
            rows = tuple(np.asarray(archive[f"rows_{i}"], np.float32) for i in range(int(meta["blocks"])))
        kept = Kept(rows, tuple(int(n) for n in meta["num_samples"]), dict(meta["extra"]))
    except (ValueError, KeyError, TypeError, OSError, EOFError):
        return None
    whole = all(r.ndim == 2 for r in rows) and len(kept.num_samples) in (0, len(rows)) \
        and len(kept.extra.get("ends", rows)) == len(rows)
    return kept if whole else None


def _drop(path: Path) -> None:
    try:
        cache.discard(path)
    except OSError:
        pass


def _reason(error: Exception) -> str:
    return str(error) if isinstance(error, cache.CacheRefused) else f"{type(error).__name__}: {error}"


def describe_reuse(reused: dict[str, Any]) -> str | None:
    """`reused 1 encoded clip (6.0 s of audio) and 1 picture from the cache`, or None when nothing was."""
    clips, pictures = int(reused.get("clips", 0)), int(reused.get("images", 0))
    parts = []
    if clips:
        parts.append(f"{clips} encoded clip{'s' if clips != 1 else ''} ({reused.get('audio_s', 0.0):.1f} s of audio)")
    if pictures:
        parts.append(f"{pictures} encoded picture{'s' if pictures != 1 else ''}")
    return f"reused {' and '.join(parts)} from the cache" if parts else None
