"""`omni trace`: run an utterance and draw its step timeline; show a saved trace; export it for Perfetto."""

from __future__ import annotations

import io
import sys
from contextlib import contextmanager
from typing import Annotated

import typer
from typer.core import TyperGroup

from ..defaults import DEFAULT_CARD
from . import examples
from . import options as o
from .report import exit_with

HELP = """Step timelines: one lane per loop, a bar per WorkUnit, and summary rows.

`omni trace TEXT` is short for `omni trace run TEXT`.
"""


class TraceGroup(TyperGroup):
    """`omni trace TEXT …` runs `omni trace run TEXT …`."""

    def parse_args(self, ctx, args):
        if args and args[0] not in self.commands and args[0] not in ("-h", "--help"):
            args = ["run", *args]
        return super().parse_args(ctx, args)


app = typer.Typer(cls=TraceGroup, help=HELP, epilog=examples.TRACE, no_args_is_help=True, rich_markup_mode=None)


@app.command("run", epilog=examples.TRACE_RUN)
def run(
    text: Annotated[str, typer.Argument(help="What to say.")],
    output: Annotated[str | None, typer.Option("--output", "-o", metavar="FILE", help="Also keep the audio.")] = None,
    trace: o.Trace = None, force: o.Force = False,
    card: o.Card = DEFAULT_CARD, program: o.Program = None, policy: o.Policy_ = o.Policy.latency_first,
    model_path: o.ModelPath = None, dtype: o.Dtype = None, device: o.Device = None,
    placement: o.Placement = None, ray_address: o.RayAddress = None, set_: o.Set = None,
    seed: o.Seed = 0, max_tokens: o.MaxTokens = None, voice: o.Voice = None, mode: o.Mode_ = None,
    handoff: o.Handoff_ = None,
) -> None:
    """Run TEXT and draw its timeline on stdout."""
    from .job import SpeakJob, request_template, resolve_text, run_job
    from .live import RunView
    from .outputs import plan_outputs
    from .session import ModelOptions
    from .trace_file import Recorder

    if output == "-":
        raise typer.BadParameter("stdout carries the timeline; give a file", param_hint="-o")
    overrides = o.overrides(set_)
    plan = plan_outputs(output, None, None, force, False)
    plan.stdout_free = False  # stdout is the timeline's, not the thinker's text
    model = ModelOptions(card, program, policy.value, {"model_path": model_path, "dtype": dtype, "device": device},
                         placement, ray_address, overrides=overrides)
    request = request_template(seed, max_tokens, voice, mode, handoff)
    recorder = Recorder()
    job = SpeakJob(resolve_text(text), model, request, plan, 1, trace, quiet=True, subscribers=[recorder])
    outcome, router, _ = run_job(job, view_factory=lambda engine: RunView(engine, None))
    if recorder.digest.num_records:
        render_digest(recorder.digest)
    exit_with(outcome)


@app.command("show", epilog=examples.TRACE_SHOW)
def show(file: Annotated[str, typer.Argument(metavar="FILE", help="A trace written by --trace.")]) -> None:
    """Draw a saved trace (JSON Lines from `--trace`) the way `omni trace TEXT` does."""
    from .trace_digest import TraceDigest
    from .trace_reader import iter_trace

    render_digest(TraceDigest.of(iter_trace(file)))


@app.command("export", epilog=examples.TRACE_EXPORT)
def export(
    file: Annotated[str, typer.Argument(metavar="FILE", help="A trace written by --trace.")],
    chrome: Annotated[bool, typer.Option("--chrome", help="Chrome Trace Event JSON (the only format so far).")] = False,
    output: Annotated[str, typer.Option("--output", "-o", metavar="OUT|-", help="Where to write it; - for stdout.")] = "-",
    force: o.Force = False,
) -> None:
    """Convert a saved trace for other tools: --chrome writes Chrome Trace Event JSON that Perfetto opens
    (a track per loop and one per request; a batched span is split evenly between its WorkUnits so events
    on a track never overlap)."""
    from .chrome import write_chrome
    from .errors import CliError
    from .trace_digest import TraceDigest
    from .trace_reader import iter_trace

    if not chrome:
        raise CliError("choose a format: --chrome")
    digest = TraceDigest.of(iter_trace(file))  # every record checked before anything is written
    if output == "-":
        write_chrome(file, digest, sys.stdout)
        return
    with open_export(output, file, force) as out:
        write_chrome(file, digest, out)


def render_digest(digest) -> None:
    from .term import stdout_console
    from .timeline import render

    render(digest, stdout_console())


@contextmanager
def open_export(output: str, source: str, force: bool):
    """The export's file, checked like every output (claims.py), never the trace it is made from."""
    import os
    from pathlib import Path

    from .claims import claim_outputs, open_pipe
    from .errors import FAILURE, USAGE, CliError
    from .outputs import is_pipe

    claims = claim_outputs([("-o", Path(output), False)], force, lambda name: False, stdout_fd=None)
    if os.path.realpath(output) == os.path.realpath(source) or (
            os.path.exists(output) and os.path.samefile(output, source)):
        raise CliError(f"-o {output} is the trace being exported; give another file", USAGE)

    def opener():
        if is_pipe(Path(output)):
            return io.TextIOWrapper(open_pipe(Path(output)), encoding="utf-8")
        return open(output, "w", encoding="utf-8")  # noqa: SIM115 - closed below

    try:
        out = claims.open_all({"-o": opener})["-o"]
    except OSError as exc:
        raise CliError(f"cannot write {output}: {exc.strerror or exc}", FAILURE) from exc
    try:
        yield out
        out.close()
    except OSError as exc:
        raise CliError(f"cannot write {output}: {exc.strerror or exc}", FAILURE) from exc
    finally:
        if not out.closed:
            try:
                out.close()
            except OSError:
                pass  # the write error above is the one to report
