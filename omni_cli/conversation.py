"""A conversation kept as JSON Lines of turns: read with every line checked, heard again, appended safely."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

KEYS = ("role", "text", "audio", "images")
ROLES = ("user", "assistant")
MAX_FILE_BYTES = 64 << 20  # read whole; a conversation this long is past any thinker's positions anyway


class HistoryError(ValueError):
    """A history file that cannot be used; the message names FILE:LINE where a line is at fault."""


@dataclass(frozen=True)
class Turn:
    """One turn as a line of the file: who spoke, what, and the files it referred to (they stay where they are).

    A user turn's audio is what the model heard; an assistant turn's audio is where its spoken reply was written
    (kept for the record: the model hears its own replies as their text, as the chat template renders them)."""

    role: str
    text: str
    audio: tuple[str, ...] = ()
    images: tuple[str, ...] = ()

    def record(self, base: Path) -> dict[str, Any]:
        line: dict[str, Any] = {"role": self.role, "text": self.text}
        if self.audio:
            line["audio"] = [_relative(p, base) for p in self.audio]
        if self.images:
            line["images"] = [_relative(p, base) for p in self.images]
        return line


def read_history(path: str | os.PathLike) -> list[Turn]:
    """The turns in `path` (none when it does not exist yet), their paths resolved against the file's folder."""
    file = Path(path)
    try:
        with open(file, "rb") as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise HistoryError(f"{file}: cannot read it: {exc.strerror or exc}") from None
    if len(data) > MAX_FILE_BYTES:
        raise HistoryError(f"{file}: over {MAX_FILE_BYTES >> 20} MiB; start a new conversation")
    turns = []
    for number, raw in enumerate(data.split(b"\n"), 1):
        if raw.strip():
            turns.append(_turn(raw, f"{file}:{number}", file.parent))
    return turns


def _turn(raw: bytes, where: str, base: Path) -> Turn:
    try:
        line = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise HistoryError(f"{where}: not UTF-8 (byte 0x{raw[exc.start]:02x} at column {exc.start + 1})") from None
    except ValueError as exc:
        raise HistoryError(f"{where}: not a JSON object ({exc})") from None
    if not isinstance(line, dict):
        raise HistoryError(f"{where}: not a JSON object of a turn (role, text, audio, images)")
    unknown = sorted(set(line) - set(KEYS))
    if unknown:
        raise HistoryError(f"{where}: unknown key {unknown[0]!r} (a turn has {', '.join(KEYS)})")
    role, text = line.get("role"), line.get("text", "")
    if role not in ROLES:
        raise HistoryError(f"{where}: role must be user or assistant, got {role!r}")
    if not isinstance(text, str):
        raise HistoryError(f"{where}: text must be a string, got {type(text).__name__}")
    audio, images = (_paths(line.get(key, []), key, where, base) for key in ("audio", "images"))
    if role == "user" and not (text.strip() or audio or images):
        raise HistoryError(f"{where}: a user turn with no text, audio or images")
    return Turn(role, text, audio, images)


def _paths(value: Any, key: str, where: str, base: Path) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(p, str) and p for p in value):
        raise HistoryError(f"{where}: {key} must be a list of file paths")
    return tuple(str(base / p) if not os.path.isabs(p) else p for p in value)


def heard_again(turns: list[Turn], path: str | os.PathLike) -> tuple:
    """The turns as a request's history: each user turn's audio and images read again from their files."""
    from .audio.heard import AudioInputError, read_file
    from .audio.seen import ImageInputError, read_image
    from .spec import PriorTurn

    prior = []
    for number, turn in enumerate(turns, 1):
        if turn.role != "user":
            prior.append(PriorTurn(turn.role, turn.text))
            continue
        try:
            clips = tuple(read_file(p) for p in turn.audio)
            images = tuple(read_image(p) for p in turn.images)
        except AudioInputError as exc:
            raise HistoryError(f"{path}: turn {number}: audio {exc}") from None
        except ImageInputError as exc:
            raise HistoryError(f"{path}: turn {number}: image {exc}") from None
        prior.append(PriorTurn(turn.role, turn.text, clips, images))
    return tuple(prior)


def check_writable(path: str | os.PathLike) -> None:
    """Refuse, before a model loads, a history that could be read but never appended to."""
    file = Path(path)
    if file.exists():
        if not file.is_file():
            raise HistoryError(f"{file}: not a file")
        if not os.access(file, os.R_OK | os.W_OK):
            raise HistoryError(f"{file}: cannot append to it (permission denied)")
        return
    folder = file.parent
    if not folder.is_dir() or not os.access(folder, os.W_OK | os.X_OK):
        raise HistoryError(f"{file}: cannot create it ({folder} is not a writable folder)")


def append_turns(path: str | os.PathLike, turns: list[Turn]) -> None:
    """Append whole lines or nothing: one write under an exclusive lock, fsync'ed; a failed write (disk full, a
    signal) cuts the file back to its size before, so no half line is ever left for the next run to trip on."""
    import fcntl

    file = Path(path)
    base = file.resolve().parent
    data = "".join(json.dumps(t.record(base), ensure_ascii=False) + "\n" for t in turns).encode()
    fd = os.open(file, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # two runs appending to one conversation take turns
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            data = b"\n" + data  # a hand-edited file whose last line has no newline
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        except BaseException:
            os.ftruncate(fd, size)
            raise
    finally:
        os.close(fd)


def keep_heard(source: Any, path: str | os.PathLike, number: int) -> str:
    """A turn heard from a stream (`--audio -`) kept beside the history as HISTORY.audio/NNNN.wav (float samples at
    the stream's own rate, so hearing it again encodes the same rows); written whole, then renamed into place."""
    from .audio.heard import write_heard

    folder = Path(f"{path}.audio")
    folder.mkdir(exist_ok=True)
    final = folder / f"{number:04d}.wav"
    partial = folder / f".{number:04d}.wav.partial"
    try:
        write_heard(source, partial)
        os.replace(partial, final)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    return str(final)


def _relative(path: str, base: Path) -> str:
    """Under the history's folder: relative to it (the folder can move whole); elsewhere: absolute."""
    full = Path(path).resolve()
    try:
        return str(full.relative_to(base))
    except ValueError:
        return str(full)
