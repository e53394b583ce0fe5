"""Reading a `--trace` file: untrusted input, streamed a record at a time, every record checked.

Traces are input like cards. A device or FIFO (`/dev/zero`) is refused before it is read;
a line is read up to a cap, never whole; each record is checked against the shape omni writes, so a
record with a missing field, a string where a number goes, a `null` duration, NaN or deep nesting
is one `FILE:LINE:` error with exit 2, not an internal error later. Lines are split on `\\n` only
(JSON keeps U+2028 and friends raw inside strings), and a last line cut mid-write (mid-character
included: a killed run) is skipped, so whatever omni writes it reads back.
"""

from __future__ import annotations

import errno
import json
import math
import os
import stat
from collections.abc import Iterator
from typing import Any

from .errors import FAILURE, USAGE, CliError

MAX_LINE_BYTES = 1 << 20  # omni's records are a few hundred bytes; an utterance's text at most a few KiB
# field: (types it may have, must it be there); numbers must also be finite
_NUMBER, _INT, _STR = (int, float), (int,), (str,)
SHAPES: dict[str, dict[str, tuple[tuple[type, ...], bool]]] = {
    "work_unit": {"request_id": (_STR, True), "loop": (_STR, True), "kind": (_STR, True), "step": (_INT, True),
                  "batch_size": (_INT, True), "start_s": (_NUMBER, True), "dur_s": (_NUMBER, True),
                  "stage": (_INT, False)},
    "request": {"request_id": (_STR, True), "phase": (_STR, True), "t_s": (_NUMBER, True), "detail": ((dict,), False)},
    "run": {"loops": ((list,), False)},
    "utterance": {"request_id": (_STR, False)},
}
MAX_DEPTH = 8  # omni's records nest 3 levels (a request's detail holds work_units per loop)
MINIMUM = {"batch_size": 1, "dur_s": 0, "step": 0}
MAX_MAGNITUDE = 1e12  # seconds (30,000 years), steps, batch sizes: past it, arithmetic on floats stops being exact


def iter_trace(path: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """(`FILE:LINE`, record) for every record of the trace at `path`, checked, one at a time.

    A bad record raises CliError naming its line; the caller names the line of a record it cannot use."""
    with _open(path) as f:
        number = 0
        count = 0
        while True:
            raw = f.readline(MAX_LINE_BYTES + 1)
            if not raw:
                break
            number += 1
            complete = raw.endswith(b"\n")
            if not complete and len(raw) > MAX_LINE_BYTES:
                raise CliError(f"{path}:{number}: line is over {MAX_LINE_BYTES} bytes (not a trace omni wrote)", USAGE)
            try:
                record = _parse(raw, path, number)
            except CliError:
                if not complete and not f.read(1):
                    break  # a run killed mid-write leaves a partial last line: the records before it stand
                raise
            if record is None:
                continue
            count += 1
            yield f"{path}:{number}", record
    if not count:
        raise CliError(f"{path}: empty trace", USAGE)


def _open(path: str):
    try:  # non-blocking: opening a FIFO nobody writes would otherwise wait here forever
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno == errno.EISDIR:
            raise CliError(f"{path}: a directory (a trace is a file written by --trace)", USAGE) from exc
        # a name that leads to no readable file is the user's input (2); a failing disk is a runtime failure (1)
        code = USAGE if exc.errno in (errno.ENOENT, errno.ENOTDIR, errno.EACCES, errno.ENAMETOOLONG) else FAILURE
        raise CliError(f"cannot read {path}: {exc.strerror or exc}", code) from exc
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):  # /dev/zero, /dev/urandom, a FIFO: no end, or not ours to drain
        os.close(fd)
        what = "a directory" if stat.S_ISDIR(mode) else "not a regular file"
        raise CliError(f"{path}: {what} (a trace is a file written by --trace)", USAGE)
    return os.fdopen(fd, "rb")


def _parse(raw: bytes, path: str, number: int) -> dict[str, Any] | None:
    where = f"{path}:{number}"
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CliError(f"{where}: not UTF-8 text (byte {exc.start + 1} of the line)", USAGE) from None
    if not line.strip():
        return None
    try:
        record = json.loads(line, parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        raise CliError(f"{where}: not JSON ({exc.msg})", USAGE) from None
    except RecursionError:
        raise CliError(f"{where}: nested too deeply", USAGE) from None
    except ValueError as exc:  # NaN/Infinity, or an integer too long to convert
        raise CliError(f"{where}: {exc}", USAGE) from None
    if raw.count(b"{") + raw.count(b"[") <= MAX_DEPTH:  # too few brackets to nest too deep: skip the walk
        return check_record(record, where, depth_known=True)
    return check_record(record, where)


def _no_constant(name: str):
    raise ValueError(f"{name} is not a number a trace holds")


def check_record(record: Any, where: str, depth_known: bool = False) -> dict[str, Any]:
    """`record` if it has the shape omni writes for its event; unknown events pass (newer omni versions)."""
    if not isinstance(record, dict) or not isinstance(record.get("event"), str):
        raise CliError(f"{where}: not a trace record (a JSON object with a string `event`)", USAGE)
    if record["event"] == "work_unit" and _is_work_unit(record):
        return record  # the bulk of a trace, checked in one expression; the loop below names what is wrong
    if not depth_known and _depth(record) > MAX_DEPTH:
        raise CliError(f"{where}: nested more than {MAX_DEPTH} levels deep (not a trace omni wrote)", USAGE)
    event = record["event"]
    for key, (types, required) in SHAPES.get(event, {}).items():
        if key not in record or (record[key] is None and not required):
            if required:
                raise CliError(f"{where}: {event} record lacks `{key}`", USAGE)
            continue
        value = record[key]
        if not isinstance(value, types) or isinstance(value, bool) or not _finite(value) or _huge(value):
            wanted = {_NUMBER: "a finite number", _INT: "an integer", _STR: "a string"}.get(types, types[0].__name__)
            raise CliError(f"{where}: {event} record's `{key}` must be {wanted}, not {_show(value)}", USAGE)
        if key in MINIMUM and value < MINIMUM[key]:
            raise CliError(f"{where}: {event} record's `{key}` must be at least {MINIMUM[key]}, not {value}", USAGE)
    if event == "run" and not all(isinstance(x, str) for x in record.get("loops") or []):
        raise CliError(f"{where}: run record's `loops` must be a list of strings", USAGE)
    if event == "request":
        audio_s = (record.get("detail") or {}).get("audio_s", 0.0)
        if (not isinstance(audio_s, _NUMBER) or isinstance(audio_s, bool) or not _finite(audio_s) or audio_s < 0
                or _huge(audio_s)):
            raise CliError(f"{where}: request record's `detail.audio_s` must be a finite number ≥ 0", USAGE)
    return record


def _is_work_unit(r: dict[str, Any]) -> bool:
    # comparisons are False for NaN and fail for infinity, so the range checks are also the finiteness checks
    start, dur, stage, step, size = r.get("start_s"), r.get("dur_s"), r.get("stage"), r.get("step"), r.get("batch_size")
    return (type(r.get("request_id")) is str and type(r.get("loop")) is str and type(r.get("kind")) is str
            and type(step) is int and 0 <= step <= MAX_MAGNITUDE and type(size) is int and 1 <= size <= MAX_MAGNITUDE
            and type(start) in (int, float) and -MAX_MAGNITUDE <= start <= MAX_MAGNITUDE
            and type(dur) in (int, float) and 0 <= dur <= MAX_MAGNITUDE
            and (stage is None or (type(stage) is int and abs(stage) <= MAX_MAGNITUDE)))


def _depth(value: Any, limit: int = 0) -> int:
    """How deep `value` nests, counting no further than just past MAX_DEPTH."""
    if limit > MAX_DEPTH or not isinstance(value, (dict, list)):
        return 0
    children = value.values() if isinstance(value, dict) else value
    return 1 + max((_depth(c, limit + 1) for c in children), default=0)


def _finite(value: Any) -> bool:
    return not isinstance(value, float) or math.isfinite(value)


def _huge(value: Any) -> bool:
    return isinstance(value, (int, float)) and abs(value) > MAX_MAGNITUDE


def _show(value: Any) -> str:
    if isinstance(value, (dict, list)):
        return "an object" if isinstance(value, dict) else "a list"
    text = json.dumps(value, ensure_ascii=True)
    return text if len(text) <= 40 else text[:37] + "..."
