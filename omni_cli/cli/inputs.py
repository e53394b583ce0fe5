"""Where utterances come from: one TEXT argument, or stdin lines read as they arrive."""

from __future__ import annotations

import os
import queue
import threading
import time
from dataclasses import dataclass, field
from typing import BinaryIO, TextIO

from .errors import CliError


@dataclass(frozen=True)
class Line:
    number: int  # 1-based line number in the input (empty lines count)
    text: str
    arrived_s: float = field(default_factory=time.perf_counter, compare=False)  # first audio is timed from here


class LineSource:
    """Utterances in order; `get(timeout)` returns a Line, None (nothing yet) or raises StopIteration at the end.

    A bad line (not UTF-8) ends the input there: `error` then holds a CliError naming the line.
    """

    def __init__(self, is_stream: bool) -> None:
        self.is_stream = is_stream  # lines of stdin (errors name the line), not one TEXT argument
        self._queue: queue.Queue = queue.Queue()
        self.error: CliError | None = None
        self.is_done = False
        self.lines_read = 0  # lines seen so far, blank ones included
        self._stopped = False

    def get(self, timeout: float | None = 0.0) -> Line | None:
        if self.is_done:
            raise StopIteration
        try:
            item = self._queue.get(timeout=timeout) if timeout else self._queue.get_nowait()
        except queue.Empty:
            return None
        if isinstance(item, Line):
            return item
        self.is_done = True
        if isinstance(item, CliError):
            self.error = item
        raise StopIteration

    @property
    def is_stopped(self) -> bool:
        return self._stopped

    def stop(self) -> None:
        """Take no more lines (a signal arrived); what is still unread is dropped."""
        self._stopped = True
        self.is_done = True

    def _put(self, item) -> None:
        if not self._stopped:
            self._queue.put(item)


def text_source(text: str) -> LineSource:
    source = LineSource(is_stream=False)
    source._put(Line(1, text))
    source._put(None)
    return source


def line_cap_bytes(max_text_chars: int) -> int:
    """The most bytes one stdin line may take: the card's limit in 4-byte characters, plus room for the
    spaces and control characters that cleaning folds away. Past it the line cannot be spoken, so
    reading stops there instead of holding an endless line (`cat /dev/zero`) in memory."""
    return 4 * max_text_chars + LINE_MARGIN_BYTES


LINE_MARGIN_BYTES = 4096


def stdin_source(stream: TextIO | None, max_text_chars: int) -> LineSource:
    """Read `stream` on a thread, a line at a time, so utterances start while later lines are unwritten."""
    if stream is None:  # started with stdin closed (`<&-`)
        raise CliError("stdin is closed: pass TEXT, or give `-` a pipe or a file to read")
    source = LineSource(is_stream=True)
    raw = getattr(stream, "buffer", stream)
    thread = threading.Thread(target=_read_lines, args=(raw, source, line_cap_bytes(max_text_chars)),
                              name="omni-stdin", daemon=True)
    thread.start()
    return source


def _chunks(stream: BinaryIO):
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):
        fd = None
    while True:
        # os.read on the descriptor: a daemon thread blocked in a buffered read would hold its lock
        # at interpreter exit (a fatal error); a raw read holds nothing
        data = os.read(fd, 1 << 16) if fd is not None else stream.read1(1 << 16)
        if not data:
            return
        yield data


def _read_lines(stream: BinaryIO, source: LineSource, cap_bytes: int) -> None:
    number = 0
    pending = b""
    try:
        for data in _chunks(stream):
            pending += data
            *lines, pending = pending.split(b"\n")
            for raw in lines:
                number += 1
                source.lines_read = number
                if len(raw) > cap_bytes or not _offer(source, number, raw):
                    return _too_long(source, number, cap_bytes) if len(raw) > cap_bytes else None
            if len(pending) > cap_bytes:  # no newline in sight: refuse now, not at the end of the stream
                return _too_long(source, number + 1, cap_bytes)
        if pending:
            source.lines_read = number + 1
            _offer(source, number + 1, pending)
    except OSError as exc:
        source._put(CliError(f"cannot read stdin: {exc.strerror or exc}", 1))
        return
    source._put(None)


def _too_long(source: LineSource, number: int, cap_bytes: int) -> None:
    source._put(CliError(f"stdin line {number} is over {cap_bytes} bytes, more than the card's limit of "
                         f"{(cap_bytes - LINE_MARGIN_BYTES) // 4} characters can take; split it into lines"))


def _offer(source: LineSource, number: int, raw: bytes) -> bool:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        byte = raw[exc.start]
        source._put(CliError(f"stdin line {number} is not UTF-8 (byte 0x{byte:02x} at column {exc.start + 1})"))
        return False
    text = text.removesuffix("\r").removeprefix("\ufeff") if number == 1 else text.removesuffix("\r")
    if text.strip():
        source._put(Line(number, text))
    return True


def check_text(text: str) -> None:
    if not text.strip():
        raise CliError("text is empty (nothing to speak); pass TEXT, or `-` to read lines from stdin")


MAX_INPUT_FILE_BYTES = 16 << 20  # read whole; the card's own character limit is checked after


def read_text_file(path: str, text: str | None) -> str:
    """The text of `-i FILE`: one utterance, however long (the card's limit still applies); UTF-8 only."""
    if text is not None:
        raise CliError("give TEXT or -i FILE, not both")
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_INPUT_FILE_BYTES + 1)
    except OSError as error:
        raise CliError(f"cannot read {path}: {error.strerror or error}") from None
    if len(data) > MAX_INPUT_FILE_BYTES:
        raise CliError(f"{path} is over {MAX_INPUT_FILE_BYTES >> 20} MiB: split it into smaller files")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise CliError(f"{path} is not UTF-8 text (byte {error.start} cannot be read)") from None
