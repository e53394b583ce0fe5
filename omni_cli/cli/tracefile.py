"""The `--trace` file: JSON Lines, a run record first, then every trace event, flushed as it happens."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from .errors import FAILURE, USAGE, CliError
from .outputs import refuse_existing

WORK_UNIT_KEYS = ("request_id", "loop", "kind", "step", "batch_size", "start_s", "dur_s")


def run_record(engine, card_arg: str, program: str | None, settings: dict[str, Any],
               request: dict[str, Any]) -> dict[str, Any]:
    from .. import __version__

    compiled = engine.program
    return {
        "event": "run", "version": __version__,
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "started_unix_s": time.time(),
        "card": compiled.card.model, "card_source": compiled.card.source, "card_arg": card_arg,
        "program": compiled.program.program, "program_source": compiled.program.source, "program_arg": program,
        "settings": {k: v for k, v in settings.items() if v is not None}, "policy": engine.policy,
        "sample_rate": engine.sample_rate, "loops": list(compiled.loops), "request": request,
    }


class TraceWriter:
    """Appends one JSON object per line and flushes it, so a crash leaves every record so far."""

    def __init__(self, path: str, force: bool):
        self.path = Path(path)
        refuse_existing(self.path, force)
        try:
            self._file = open(self.path, "w", encoding="utf-8")  # noqa: SIM115 - closed in close()
        except OSError as exc:
            raise CliError(f"cannot write {path}: {exc.strerror or exc}", FAILURE) from exc

    def write(self, record: dict[str, Any]) -> None:
        self._file.write(json.dumps(record, ensure_ascii=False) + "\n")
        self._file.flush()

    def __call__(self, event) -> None:
        self.write(event.to_json())

    def utterance(self, utt) -> None:
        """Which text (and file) a request id stands for."""
        self.write({"event": "utterance", "request_id": utt.request_id, "index": utt.index, "line": utt.line,
                    "text": utt.text, "path": utt.path})

    def close(self) -> None:
        self._file.close()


class Recorder:
    """Keeps every trace event as its JSON record, for `omni trace TEXT`."""

    def __init__(self) -> None:
        self.records: list[dict[str, Any]] = []

    def write(self, record: dict[str, Any]) -> None:
        self.records.append(record)

    def __call__(self, event) -> None:
        self.records.append(event.to_json())


def read_trace(path: str) -> list[dict[str, Any]]:
    """Every record of a trace file; a line that is not a JSON object is an error naming the line."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise CliError(f"{path}: not a trace file (not UTF-8 text)", USAGE) from exc
    except OSError as exc:
        raise CliError(f"cannot read {path}: {exc.strerror or exc}", FAILURE) from exc
    records = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            if number == len(text.splitlines()) and not text.endswith("\n"):
                break  # a run killed mid-write leaves a partial last line
            raise CliError(f"{path}:{number}: not JSON ({exc.msg})", USAGE) from exc
        if not isinstance(record, dict) or "event" not in record:
            raise CliError(f"{path}:{number}: not a trace record (no `event` key)", USAGE)
        if record["event"] == "work_unit" and any(k not in record for k in WORK_UNIT_KEYS):
            missing = ", ".join(k for k in WORK_UNIT_KEYS if k not in record)
            raise CliError(f"{path}:{number}: work_unit record lacks {missing}", USAGE)
        records.append(record)
    if not records:
        raise CliError(f"{path}: empty trace", USAGE)
    return records
