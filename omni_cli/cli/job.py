"""One `speak`-style run put together: engine, outputs, trace file, view, then the runner."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..spec import SpeakRequest
from .errors import OK, USAGE, CliError
from .inputs import check_text, stdin_source, text_source
from .live import RunView, make_view
from .load_view import make_load_view
from .outputs import OutputPlan, Router, claim_plan, isatty
from .runner import Outcome, run_utterances
from .session import ModelOptions, check_voice, open_engine
from .signals import GracefulStop
from .trace_file import TraceWriter, run_record


@dataclass
class SpeakJob:
    text: str | None  # None: stdin lines
    model: ModelOptions
    request: SpeakRequest  # the template every utterance copies, with its own text
    plan: OutputPlan
    concurrency: int = 4
    trace_path: str | None = None
    quiet: bool = False
    verbose: bool = False
    subscribers: list[Callable] = field(default_factory=list)  # more trace-event listeners (omni trace)
    allow_truncation: bool = False  # a request cut short at a cap still exits 0 (it is reported either way)
    allow_no_audio: bool = False  # a request that ends with no audio still exits 0 (it is reported either way)
    on_stop: Callable[[], None] | None = None  # a signal also ends this (omni chat: the heard audio still arriving)


def request_template(seed: int, max_tokens: int | None, voice: str | None, mode, handoff,
                     speed: float | None = None) -> SpeakRequest:
    """The options every utterance shares, checked once; each line becomes `replace(template, text=...)`."""
    return SpeakRequest("", mode=mode.value if mode else None, voice=voice, seed=seed, max_tokens=max_tokens,
                        handoff=handoff.value if handoff else None, speed=speed)


def request_fields(template: SpeakRequest) -> dict[str, Any]:
    """The template as the trace's run record shows it (its placeholder text left out)."""
    return {k: getattr(template, k) for k in ("seed", "max_tokens", "voice", "mode", "handoff", "speed")}


def resolve_text(text: str | None) -> str | None:
    """TEXT as given; `-`, or no TEXT with stdin not a terminal, means stdin lines (None)."""
    if text == "-":
        return None
    if text is None:
        if sys.stdin is None or sys.stdin.isatty():
            raise CliError("no text given: pass TEXT, or `-` (or a pipe) to speak stdin lines")
        return None
    check_text(text)
    return text


def run_job(job: SpeakJob, view_factory: Callable[[Any], RunView] | None = None) -> tuple[Outcome, Router, RunView]:
    # an output it may not write is refused before the model loads (a real checkpoint takes seconds to
    # minutes); `_run_on` claims them again when it opens them
    claim_plan(job.plan, job.trace_path)
    with make_load_view(sys.stderr, quiet=job.quiet) as on_load:
        engine = open_engine(job.model, on_load)
    try:
        return _run_on(engine, job, view_factory)
    finally:
        engine.close()  # workers, processes and Ray actors go with the run


def _run_on(engine, job: SpeakJob, view_factory) -> tuple[Outcome, Router, RunView]:
    from ..spec import clean_text

    check_voice(engine, job.request.voice)
    if job.text is not None and job.request.audio is None and not (job.request.images or job.request.videos):  # a bad TEXT fails before any file is created
        clean_text(job.text, engine.program.card.limits.max_text_chars)
    view = view_factory(engine) if view_factory else make_view(engine, sys.stderr, quiet=job.quiet,
                                                               verbose=job.verbose)
    live = view.draws_live and isatty(sys.stdout)  # the live view owns the terminal
    router = Router(job.plan, engine.sample_rate, sys.stdout.buffer, sys.stdout, above=view.above if live else None)
    router.keep_empty = job.allow_no_audio
    claims = claim_plan(job.plan, job.trace_path)  # every refusal comes before any file is touched
    source = (text_source(job.text) if job.text is not None
              else stdin_source(sys.stdin, engine.program.card.limits.max_text_chars))
    if job.on_stop is not None:  # a step waiting on that input returns, so the cancel is seen at once
        stop_lines, on_stop = source.stop, job.on_stop
        source.stop = lambda: (stop_lines(), on_stop())

    def open_trace() -> TraceWriter:
        writer = TraceWriter(job.trace_path, job.plan.force)
        writer.write(run_record(engine, job.model.card, job.model.program, job.model.settings,
                                request_fields(job.request), job.model.placement))
        return writer

    # signals are caught from before the outputs open: a Ctrl-C then still removes a file the run made empty
    stop = GracefulStop(lambda signum: None)  # (the run binds its own stop to it)
    trace = None
    with stop:
        try:
            openers = {"--trace": open_trace} if job.trace_path else {}
            trace = claims.open_all({job.plan.flag: router.open, **openers}).get("--trace")
            if trace is not None:
                engine.subscribe(trace)
            engine.subscribe(view.on_trace)
            for fn in job.subscribers:
                engine.subscribe(fn)
            on_utterance = trace.utterance if trace is not None else None
            in_flight = job.concurrency * job.model.replicas  # the pool gives each replica at most -j
            outcome = run_utterances(engine, source, router, view, job.request, in_flight, on_utterance,
                                     allow_truncation=job.allow_truncation, allow_no_audio=job.allow_no_audio,
                                     stop=stop)
        finally:
            if trace is not None:
                trace.close()
        leave_no_empty_files(outcome, source, router, claims, job)
    return outcome, router, view


def leave_no_empty_files(outcome: Outcome, source, router: Router, claims, job: SpeakJob) -> None:
    """A run that spoke nothing, or wrote no audio, leaves no file it created, and says so.

    No utterance at all (only blank stdin lines, a first line refused): every file and directory the
    run made goes, the trace included, and blank input is bad input (exit 2). Utterances that made no
    audio: the audio file (or out-dir) goes unless --allow-no-audio took the empty result and the run
    ended well; the trace stays, to show why."""
    if not outcome.utterances:
        outcome.removed = [str(p) for p in claims.undo()]
        if outcome.code == OK and source.is_stream:
            outcome.code = USAGE
            outcome.errors.append(nothing_to_speak(source.lines_read))
        return
    if router.samples_written == 0 and not (job.allow_no_audio and outcome.code == OK):
        outcome.removed = [*router.removed, *(str(p) for p in claims.undo(job.plan.flag))]
    else:
        outcome.removed = list(router.removed)


def nothing_to_speak(lines: int) -> str:
    if lines == 0:
        return "stdin was empty: nothing to speak"
    return f"stdin held no text to speak, only {lines} blank line{'s' if lines != 1 else ''}"


def destination(plan: OutputPlan) -> str | None:
    if plan.kind == "dir":
        return f"{plan.path}/ (0001.{plan.format}, …)"
    if plan.kind == "file":
        return str(plan.path)
    if plan.kind == "stdout":
        return "stdout"
    return None

