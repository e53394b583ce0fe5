"""The `--trace` file: JSON Lines, a run record first, then every trace event, flushed as it happens."""

from __future__ import annotations

import io
import json
import time
from pathlib import Path
from typing import Any

from .errors import FAILURE, CliError
from .outputs import refuse_existing


def run_record(engine, card_arg: str, program: str | None, settings: dict[str, Any],
               request: dict[str, Any], placement: str | None = None) -> dict[str, Any]:
    """`placement`: the --placement override, to say the thread count a placed worker runs with."""
    from .. import __version__
    from ..engine.executors import threads_as_placed

    compiled = engine.program
    return {
        "event": "run", "version": __version__,
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "started_unix_s": time.time(),
        "card": compiled.card.model, "card_source": compiled.card.source, "card_arg": card_arg,
        "program": compiled.program.program, "program_source": compiled.program.source, "program_arg": program,
        "settings": {k: v for k, v in settings.items() if v is not None}, "policy": engine.policy,
        "sample_rate": engine.sample_rate, "loops": list(compiled.loops), "request": request,
        "threads": threads_as_placed(compiled, placement),
    }


class TraceWriter:
    """Appends one JSON object per line and flushes it, so a crash leaves every record so far."""

    def __init__(self, path: str, force: bool):
        from .claims import open_pipe
        from .outputs import is_pipe

        self.path = Path(path)
        refuse_existing(self.path, force)
        try:
            if is_pipe(self.path):  # a FIFO: never wait forever for a reader
                self._file = io.TextIOWrapper(open_pipe(self.path), encoding="utf-8")
            else:
                self._file = open(self.path, "w", encoding="utf-8")  # noqa: SIM115 - closed in close()
        except OSError as exc:
            raise CliError(f"cannot write {path}: {exc.strerror or exc}", FAILURE) from exc

    def write(self, record: dict[str, Any]) -> None:
        line = json.dumps(record, ensure_ascii=False)
        try:
            line.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate (TEXT from a non-UTF-8 argv): escape it, stay readable
            line = json.dumps(record)
        try:
            self._file.write(line + "\n")
            self._file.flush()
        except OSError as exc:  # a full disk or device (/dev/full): name the file
            raise CliError(f"cannot write {self.path}: {exc.strerror or exc}", FAILURE) from exc

    def __call__(self, event) -> None:
        self.write(event.to_json())

    def utterance(self, utt) -> None:
        """Which text (and file) a request id stands for."""
        self.write({"event": "utterance", "request_id": utt.request_id, "index": utt.index, "line": utt.line,
                    "text": utt.text, "path": utt.path})

    def close(self) -> None:
        try:
            self._file.close()
        except OSError:
            pass  # every record was flushed as it was written, or its write already failed and said so


class Recorder:
    """Takes every trace event into a digest, for `omni trace TEXT` to draw."""

    def __init__(self) -> None:
        from .trace_digest import TraceDigest

        self.digest = TraceDigest()

    def write(self, record: dict[str, Any]) -> None:
        self.digest.add("<run>", record)

    def __call__(self, event) -> None:
        self.write(event.to_json())
