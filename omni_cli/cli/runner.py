"""Run utterances through one engine: feed lines as they arrive, route the streams, stop cleanly."""

from __future__ import annotations

import os
import sys
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from .endings import SIGNAL_REASONS, STDOUT_CLOSED, closed_reason, failure_reason, no_audio_reason
from .errors import FAILURE, OK, PIPE_CLOSED, USAGE, classify, is_internal
from .inputs import LineSource
from .outputs import Router, Utterance
from .signals import GracefulStop


@dataclass
class Outcome:
    code: int = OK
    errors: list[str] = field(default_factory=list)  # one line each, without the `omni: error:` prefix
    utterances: list[Utterance] = field(default_factory=list)
    stopped: str | None = None  # why the run stopped early: "disk full", "stdout closed", "interrupted", …
    removed: list[str] = field(default_factory=list)  # files this run made, got no audio, and took away


@dataclass
class Driver:
    """Feeds lines into the engine (at most `concurrency` at once) and routes every event it yields."""

    engine: Any
    source: LineSource
    router: Router
    view: Any
    request: Any  # the SpeakRequest template: every utterance is it with its own text
    concurrency: int
    on_utterance: Callable[[Utterance], None] | None = None
    allow_truncation: bool = False
    allow_no_audio: bool = False
    outcome: Outcome = field(default_factory=Outcome)
    _pending: deque = field(default_factory=deque)
    _by_id: dict[str, Utterance] = field(default_factory=dict)

    def run(self) -> Outcome:
        from ..audio import OutputClosed

        try:
            self._loop()
        except BaseException as exc:
            self._abandon()
            closed = isinstance(exc, (OutputClosed, BrokenPipeError))
            reason = closed_reason(exc, self.router.plan.audio_on_stdout) if closed else failure_reason(exc)
            self._stop_running(reason, None if closed else classify(exc)[1], report=not closed)
            raise
        if self.source.error is not None:
            self._fail(self.source.error.code, str(self.source.error))
        return self.outcome

    def stop(self, signum: int | None = None) -> None:
        """From a signal handler: only flags (the engine cancels at its next step boundary)."""
        self.outcome.stopped = SIGNAL_REASONS.get(signum, "stopped")
        self.source.stop()
        self.engine.cancel_all()

    def _stop_running(self, reason: str, error: str | None, report: bool) -> None:
        """An output failed or went away: every utterance not yet done is `stopped`, saying why."""
        self.outcome.stopped = reason
        for utt in self.outcome.utterances:
            if utt.status in ("queued", "running"):
                utt.status, utt.reason, utt.error = "stopped", reason, error
                try:
                    self.router.stop(utt, report)
                except Exception:  # noqa: S110 - the failure that stopped the run is the one to report
                    pass

    def _loop(self) -> None:
        engine = self.engine
        while True:
            self._feed()
            if engine.is_idle:
                if self.source.is_done and (not self._pending or self.source.is_stopped):
                    return
                try:
                    line = self.source.get(timeout=0.1)  # wait for the next line (a signal ends the wait)
                except StopIteration:
                    continue
                if line is not None:
                    self._pending.append(line)
                continue
            for event in engine.events():
                self._handle(event)
                if engine.num_active < self.concurrency:
                    self._feed()

    def _feed(self) -> None:
        while not self.source.is_done:
            try:
                line = self.source.get()
            except StopIteration:
                break
            if line is None:
                break
            self._pending.append(line)
        while self._pending and self.engine.num_active < self.concurrency and not self.source.is_stopped:
            self._submit(self._pending.popleft())

    def _submit(self, line) -> None:
        from ..spec import SpecError

        utt = Utterance(len(self.outcome.utterances) + 1, line.number, line.text, arrived_s=line.arrived_s)
        try:
            handle = self.engine.submit(replace(self.request, text=line.text))
        except SpecError as exc:  # this line is bad: speak none after it, finish those before it
            self._fail(USAGE, f"line {line.number}: {exc}" if self.source.is_stream else str(exc))
            self.source.stop()
            self._pending.clear()
            return
        utt.request_id, utt.status = handle.request_id, "running"
        self._by_id[utt.request_id] = utt
        self.outcome.utterances.append(utt)
        self.router.begin(utt)
        self.view.on_submit(utt)
        if self.on_utterance is not None:
            self.on_utterance(utt)

    def _handle(self, event) -> None:
        from ..spec.stream import AudioChunk, Notice, RequestDone, RequestStatus, TextPiece

        utt = self._by_id[event.request_id]
        if isinstance(event, AudioChunk):
            if utt.first_audio_after_line_s is None:
                utt.first_audio_after_line_s = time.perf_counter() - utt.arrived_s
            self.router.audio(utt, event.samples)
            self.view.on_audio(utt, event.num_samples)
        elif isinstance(event, TextPiece):
            self.router.text(utt, event.text)
        elif isinstance(event, Notice):  # the request goes on: a warning, not an error
            where = f"line {utt.line}: " if self.source.is_stream else ""
            self.view.warn(f"omni: warning: {where}{event.message}")
        elif isinstance(event, RequestDone):
            utt.status, utt.error, utt.metrics = event.status.value, event.error, event.metrics
            truncated = event.metrics.get("truncated")
            if truncated and event.status is RequestStatus.FINISHED:  # never silently cut short
                utt.status = "truncated"
                utt.error = "cut short: " + ", ".join(f"{loop} stopped at its {cap}" for loop, cap in truncated.items())
                utt.reason = utt.error
            elif event.status is RequestStatus.FINISHED and utt.num_samples == 0:  # no silent empty result
                utt.status, utt.reason = "no_audio", no_audio_reason(event.metrics)
            elif event.status is RequestStatus.CANCELLED and self.outcome.stopped:
                utt.status, utt.reason = "stopped", self.outcome.stopped
            self.router.done(utt)
            self.view.on_done(utt)
            where = f"line {utt.line}: " if self.source.is_stream else ""
            if event.error:
                self._fail(FAILURE, f"{where}{event.error}")
            elif utt.status == "truncated" and not self.allow_truncation:
                self._fail(FAILURE, f"{where}speech {utt.error} (--allow-truncation accepts it)")
            elif utt.status == "no_audio" and not self.allow_no_audio:
                self._fail(FAILURE, f"{where}no audio: {utt.reason} (--allow-no-audio accepts it)")
            elif utt.status == "no_audio":
                self.view.warn(f"omni: warning: {where}no audio: {utt.reason}")

    def _fail(self, code: int, message: str) -> None:
        self.outcome.errors.append(message)
        if self.outcome.code in (OK, FAILURE):
            self.outcome.code = code

    def _abandon(self) -> None:
        """An output failed or went away: cancel everything, let the engine release it, drop the events."""
        self.source.stop()
        self.engine.cancel_all()
        try:
            for _ in self.engine.events():
                pass
        except Exception:  # noqa: S110 - the error already in flight is the one to report
            pass


def run_utterances(engine, source: LineSource, router: Router, view, request, concurrency: int,
                   on_utterance: Callable[[Utterance], None] | None = None, *, allow_truncation: bool = False,
                   allow_no_audio: bool = False, stop: GracefulStop | None = None) -> Outcome:
    """The whole run: outputs open, signals caught, closed cleanly however it ends. `stop`: the caller's,
    already catching signals since before the outputs opened (one that came is passed to the run now)."""
    from contextlib import nullcontext

    from ..audio import OutputClosed

    driver = Driver(engine, source, router, view, request, concurrency, on_utterance, allow_truncation,
                    allow_no_audio)
    catching = nullcontext() if stop is not None else None
    if stop is None:
        stop = GracefulStop(driver.stop)
    else:
        stop.bind(driver.stop)
    try:
        with catching or stop, view:
            try:
                outcome = driver.run()
            finally:
                router.close()
    except (OutputClosed, BrokenPipeError):
        quiet_stdout()
        return Outcome(PIPE_CLOSED, [], driver.outcome.utterances, driver.outcome.stopped or STDOUT_CLOSED)
    except Exception as exc:
        if is_internal(exc):
            raise  # main() reports it (with its traceback under --debug)
        code, message = classify(exc)
        driver.outcome.code, driver.outcome.errors = code, [*driver.outcome.errors, message]
        return driver.outcome
    if stop.exit_code is not None:
        outcome.code = stop.exit_code
    return outcome


def quiet_stdout() -> None:
    """The reader of stdout left: point fd 1 at /dev/null so the exit-time flush cannot complain."""
    try:
        if sys.stdout is None or sys.stdout.fileno() != 1:
            return
    except (OSError, ValueError, AttributeError):
        return  # not a real descriptor (a test runner's buffer)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.close(devnull)
