"""Routing a run's outputs: audio to a file, a directory or stdout; text or JSON to stdout."""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, TextIO

from .errors import USAGE, CliError

NUMBERED = re.compile(r"^\d{4,}\.(wav|raw|flac|mp3|opus)$")


@dataclass
class OutputPlan:
    kind: str  # none | file | stdout | dir
    path: Path | None = None
    format: str | None = None  # wav | raw | flac | mp3 | opus; None: from the file's suffix
    force: bool = False
    as_json: bool = False
    stdout_free: bool = True  # False: stdout belongs to something else (a timeline); print no text or JSON

    @property
    def audio_on_stdout(self) -> bool:
        return self.kind == "stdout"

    @property
    def flag(self) -> str:
        """How the user named the audio output (the key of its claim)."""
        return "--out-dir" if self.kind == "dir" else "-o"


def plan_outputs(output: str | None, out_dir: str | None, fmt: str | None, force: bool, as_json: bool) -> OutputPlan:
    """Check the output options against each other; nothing is opened yet."""
    if output is not None and out_dir is not None:
        raise CliError("-o and --out-dir: give one (`-o DIR/` is the same as `--out-dir DIR`)")
    if out_dir is not None or (output is not None and output != "-" and (output.endswith(("/", "\\"))
                                                                         or Path(output).is_dir())):
        return OutputPlan("dir", Path(out_dir or output), fmt or "wav", force, as_json)
    if output == "-":
        if as_json:
            raise CliError("--json: stdout carries the audio with `-o -`; write audio to a file to get JSON")
        if fmt == "flac":
            raise CliError("--format flac needs a file (its header is written at the end); use wav or raw for `-o -`")
        return OutputPlan("stdout", None, fmt or "wav", force, False)
    if output is None:
        return OutputPlan("none", None, None, force, as_json)
    from ..audio import SUFFIX_FORMATS

    path = Path(output)
    if fmt is None and not path.suffix and path.exists() and not path.is_file():
        fmt = "wav"  # a device such as /dev/null
    if fmt is None and path.suffix.lower() not in SUFFIX_FORMATS:
        raise CliError(f"-o {output}: unknown audio suffix {Path(output).suffix or '(none)'!r} "
                       f"(use {', '.join(SUFFIX_FORMATS)}, or --format)")
    return OutputPlan("file", path, fmt, force, as_json)


@dataclass
class Utterance:
    index: int  # 1-based, in input order: the nth non-empty line
    line: int
    text: str
    request_id: str = ""
    path: str | None = None
    num_samples: int = 0
    reply: list[str] = field(default_factory=list)
    status: str = "queued"  # running, then finished | truncated | no_audio | stopped | failed
    error: str | None = None
    reason: str | None = None  # why it is truncated, no_audio or stopped (e.g. "disk full", "interrupted")
    metrics: dict[str, Any] = field(default_factory=dict)
    arrived_s: float = 0.0  # time.perf_counter() when its line arrived
    first_audio_after_line_s: float | None = None  # from the line's arrival, queueing included

    def record(self, sample_rate: int) -> dict[str, Any]:
        """The `--json` object for this utterance."""
        m = self.metrics
        return {"index": self.index, "line": self.line, "text": self.text, "reply": "".join(self.reply),
                "path": self.path, "status": self.status, "duration_s": self.num_samples / sample_rate,
                "num_samples": self.num_samples, "sample_rate": sample_rate, "ttfa_s": m.get("ttfa_s"),
                "first_audio_after_line_s": self.first_audio_after_line_s, "latency_s": m.get("latency_s"),
                "work_units": m.get("work_units", {}), "reused": m.get("reused") or {}, "reason": self.reason,
                "error": self.error}


class Sequencer:
    """Runs each utterance's actions on a shared sink in input order: later ones wait for earlier ones."""

    def __init__(self) -> None:
        self._head = 1
        self._held: dict[int, list[Callable[[], None]]] = {}
        self._finished: set[int] = set()

    def run(self, index: int, action: Callable[[], None]) -> None:
        if index == self._head:
            action()
        else:
            self._held.setdefault(index, []).append(action)

    def finish(self, index: int) -> None:
        self._finished.add(index)
        while self._head in self._finished:
            self._finished.discard(self._head)
            self._head += 1
            for action in self._held.pop(self._head, []):
                action()


class Router:
    """Sends each utterance's text and audio where the plan says, as they stream."""

    def __init__(self, plan: OutputPlan, sample_rate: int, stdout: BinaryIO, text_out: TextIO,
                 above: Callable[[Callable[[], None]], None] | None = None):
        self.plan = plan
        self.sample_rate = sample_rate
        self._stdout = stdout
        self._text_out = text_out
        self._above = above  # the live view owns the terminal: a whole utterance's text goes above it
        self._shared = None  # the one writer of `-o FILE` and `-o -`
        self._own: dict[int, Any] = {}  # dir mode: a writer per utterance
        self._audio_seq = Sequencer()
        self._stdout_seq = Sequencer()
        self.samples_written = 0
        self.keep_empty = False  # --allow-no-audio: an utterance's own file that got no audio is kept
        self._made: set[int] = set()  # dir mode: utterances whose file this run created
        self.removed: list[str] = []  # files of no audio this run made and took away again

    @property
    def prints_text(self) -> bool:
        return self.plan.stdout_free and not self.plan.audio_on_stdout and not self.plan.as_json

    def open(self) -> Router:
        """Open the audio output (claims.py has checked it, and every other output, first)."""
        from ..audio import SUFFIX_FORMATS, RawPcmWriter, WavStreamWriter, open_audio_output
        from .claims import open_pipe

        plan = self.plan
        if plan.kind == "file" and is_pipe(plan.path):  # a FIFO: a stream, like stdout
            if (plan.format or SUFFIX_FORMATS.get(plan.path.suffix.lower())) == "flac":
                raise CliError(f"-o {plan.path}: a FIFO takes wav or raw, not flac (its header is written at the end)")
            fmt = plan.format or SUFFIX_FORMATS.get(plan.path.suffix.lower(), "wav")
            if fmt in ("mp3", "opus"):
                from ..audio.codec_writers import CodecStreamWriter

                self._shared = CodecStreamWriter(open_pipe(plan.path), self.sample_rate, fmt, close_stream=True)
            else:
                writer = RawPcmWriter if fmt == "raw" else WavStreamWriter
                self._shared = writer(open_pipe(plan.path), self.sample_rate, close_stream=True)
        elif plan.kind == "file":
            self._shared = open_audio_output(plan.path, self.sample_rate, plan.format)
        elif plan.kind == "stdout":
            if isatty(self._stdout):
                raise CliError("-o -: stdout is a terminal; pipe the audio (`| aplay`) or use -o FILE", USAGE)
            self._shared = open_audio_output(self._stdout, self.sample_rate, plan.format)
        elif plan.kind == "dir":
            make_dir(plan.path)
        return self

    def begin(self, utt: Utterance) -> None:
        plan = self.plan
        if plan.kind == "dir":
            from ..audio import open_audio_output

            path = plan.path / f"{utt.index:04d}.{plan.format}"
            made = not os.path.lexists(path)
            self._own[utt.index] = open_audio_output(path, self.sample_rate, plan.format)
            if made:
                self._made.add(utt.index)
            utt.path = str(path)
        elif plan.kind == "file":
            utt.path = str(plan.path)
        elif plan.kind == "stdout":
            utt.path = "-"

    def text(self, utt: Utterance, piece: str) -> None:
        utt.reply.append(piece)
        if self.prints_text and self._above is None:
            self._stdout_seq.run(utt.index, lambda: self._print(piece))

    def audio(self, utt: Utterance, samples) -> None:
        n = int(samples.shape[0])
        utt.num_samples += n
        writer = self._own.get(utt.index)
        try:
            if writer is not None:
                self._write(writer, samples)
            elif self._shared is not None:
                self._audio_seq.run(utt.index, lambda: self._write(self._shared, samples))
        except BaseException:
            utt.num_samples -= n  # the chunk that failed is not in the file
            raise

    def done(self, utt: Utterance) -> None:
        self._close_own(utt, keep_empty=self.keep_empty)
        self._audio_seq.finish(utt.index)
        self._report(utt)

    def stop(self, utt: Utterance, report: bool) -> None:
        """The run stopped with `utt` unfinished: close its file (removed if this run made it and it got no
        audio), let later utterances' output through, and print its record unless stdout is gone."""
        try:
            self._close_own(utt, keep_empty=False)
        except Exception:  # noqa: S110 - the failure that stopped the run is the one to report
            pass
        self._audio_seq.finish(utt.index)
        if report:  # else stdout is gone: nothing more is printed
            self._report(utt)

    def _close_own(self, utt: Utterance, keep_empty: bool) -> None:
        writer = self._own.pop(utt.index, None)
        if writer is None:
            return
        made = utt.index in self._made
        self._made.discard(utt.index)
        try:
            writer.close()
        finally:
            if made and writer.num_samples == 0 and not keep_empty:
                Path(utt.path).unlink(missing_ok=True)
                self.removed.append(utt.path)
                utt.path = None

    def _report(self, utt: Utterance) -> None:
        if self.plan.as_json and self.plan.stdout_free and not self.plan.audio_on_stdout:
            line = json.dumps(utt.record(self.sample_rate), ensure_ascii=False)
            self._stdout_seq.run(utt.index, lambda: self._print(line + "\n"))
        elif self.prints_text:
            if self._above is not None:  # in input order, as each finishes, saying whose text it is
                label = f"{utt.path or '(no audio)'}: " if self.plan.kind == "dir" else ""
                line = label + "".join(utt.reply) + "\n"
                self._stdout_seq.run(utt.index, lambda: self._above(lambda: self._print(line)))
            else:
                self._stdout_seq.run(utt.index, lambda: self._print("\n"))
        self._stdout_seq.finish(utt.index)

    def close(self) -> None:
        """Close every writer (files stay valid: their headers are current after each chunk)."""
        writers = [*self._own.values(), *([self._shared] if self._shared is not None else [])]
        self._own.clear()
        self._shared = None
        first: BaseException | None = None
        for writer in writers:
            try:
                writer.close()
            except Exception as exc:  # close every one; report the first failure
                first = first or exc
        if first is not None:
            raise first

    def _write(self, writer, samples) -> None:
        writer.write(samples)
        self.samples_written += int(samples.shape[0])

    def _print(self, text: str) -> None:
        self._text_out.write(text)
        self._text_out.flush()


def claim_plan(plan: OutputPlan, trace_path: str | None):
    """Check the audio output and the trace together, before either is opened (see claims.py)."""
    from .claims import claim_outputs

    outputs = [(plan.flag, plan.path, plan.kind == "dir")] if plan.kind in ("file", "dir") else []
    if trace_path is not None:
        outputs.append(("--trace", Path(trace_path), False))
    return claim_outputs(outputs, plan.force, lambda name: NUMBERED.match(name) is not None)


def refuse_existing(path: Path, force: bool) -> None:
    if not force and path.is_file():  # devices (/dev/null) and pipes are not files to keep
        raise CliError(f"{path} exists; pass --force to overwrite it", USAGE)


def make_dir(path: Path) -> None:
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CliError(f"cannot create {path}: {exc.strerror or exc}", 1) from exc


def is_pipe(path: Path) -> bool:
    try:
        mode = path.stat().st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def isatty(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
