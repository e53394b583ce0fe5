"""`omni trace`: run an utterance and draw its step timeline; show a saved trace; export it for Perfetto."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from typer.core import TyperGroup

from . import options as o
from .report import exit_with

HELP = """Step timelines: one lane per loop, a bar per WorkUnit, and summary rows.

\b
  omni trace "Hello, world"                  run it and draw the timeline
  omni speak "Hello" -o hi.wav --trace t.jsonl && omni trace show t.jsonl
  omni trace export t.jsonl --chrome -o t.json   then open t.json in ui.perfetto.dev

`omni trace TEXT` is short for `omni trace run TEXT`.
"""


class TraceGroup(TyperGroup):
    """`omni trace TEXT …` runs `omni trace run TEXT …`."""

    def parse_args(self, ctx, args):
        if args and args[0] not in self.commands and args[0] not in ("-h", "--help"):
            args = ["run", *args]
        return super().parse_args(ctx, args)


app = typer.Typer(cls=TraceGroup, help=HELP, no_args_is_help=True, rich_markup_mode=None)


@app.command("run")
def run(
    text: Annotated[str, typer.Argument(help="What to say.")],
    output: Annotated[str | None, typer.Option("--output", "-o", metavar="FILE", help="Also keep the audio.")] = None,
    trace: o.Trace = None, force: o.Force = False,
    card: o.Card = "qwen2_5_omni_toy", program: o.Program = None, policy: o.Policy_ = o.Policy.latency_first,
    model_path: o.ModelPath = None, dtype: o.Dtype = None, device: o.Device = None,
    seed: o.Seed = 0, max_tokens: o.MaxTokens = None, voice: o.Voice = None, mode: o.Mode_ = None,
    handoff: o.Handoff_ = None,
) -> None:
    """Run TEXT and draw its timeline on stdout.

    \b
      omni trace run "Hello, world"
      omni trace run "Tell me a story" --mode chat --handoff barrier
    """
    from .job import SpeakJob, resolve_text, run_job
    from .live import RunView
    from .outputs import plan_outputs
    from .session import ModelOptions
    from .tracefile import Recorder

    if output == "-":
        raise typer.BadParameter("stdout carries the timeline; give a file", param_hint="-o")
    plan = plan_outputs(output, None, None, force, False)
    plan.stdout_free = False  # stdout is the timeline's, not the thinker's text
    model = ModelOptions(card, program, policy.value, {"model_path": model_path, "dtype": dtype, "device": device})
    request = {"seed": seed, "max_tokens": max_tokens, "voice": voice,
               "mode": mode.value if mode else None, "handoff": handoff.value if handoff else None}
    recorder = Recorder()
    job = SpeakJob(resolve_text(text), model, request, plan, 1, trace, quiet=True, subscribers=[recorder])
    outcome, router, _ = run_job(job, view_factory=lambda engine: RunView(engine, None))
    if recorder.records:
        render_records(recorder.records)
    exit_with(outcome)


@app.command("show")
def show(file: Annotated[str, typer.Argument(metavar="FILE", help="A trace written by --trace.")]) -> None:
    """Draw a saved trace (JSON Lines from `--trace`) the way `omni trace TEXT` does.

    \b
      omni trace show t.jsonl
    """
    from .tracefile import read_trace

    render_records(read_trace(file))


@app.command("export")
def export(
    file: Annotated[str, typer.Argument(metavar="FILE", help="A trace written by --trace.")],
    chrome: Annotated[bool, typer.Option("--chrome", help="Chrome Trace Event JSON (the only format so far).")] = False,
    output: Annotated[str, typer.Option("--output", "-o", metavar="OUT|-", help="Where to write it; - for stdout.")] = "-",
    force: o.Force = False,
) -> None:
    """Convert a saved trace for other tools: --chrome writes Chrome Trace Event JSON that Perfetto opens
    (a track per loop and one per request; a batched span is split evenly between its WorkUnits so events
    on a track never overlap).

    \b
      omni trace export t.jsonl --chrome -o t.json
    """
    from pathlib import Path

    from .chrome import chrome_trace
    from .errors import CliError
    from .outputs import refuse_existing
    from .tracefile import read_trace

    if not chrome:
        raise CliError("choose a format: --chrome")
    document = chrome_trace(read_trace(file))
    text = json.dumps(document, ensure_ascii=False)
    if output == "-":
        typer.echo(text)
        return
    refuse_existing(Path(output), force)
    try:
        Path(output).write_text(text + "\n", encoding="utf-8")
    except OSError as exc:
        raise CliError(f"cannot write {output}: {exc.strerror or exc}", 1) from exc


def render_records(records) -> None:
    from rich.console import Console

    from .timeline import render

    render(records, Console(highlight=False))
