"""`omni speak`: text (or stdin lines) to speech, streamed to a WAV file, a directory or stdout."""

from __future__ import annotations

from typing import Annotated

import typer

from ..defaults import DEFAULT_CARD
from . import options as o
from .report import exit_with

HELP = """Speak TEXT (or stdin lines) through the card's cascade, writing audio as it is made.

\b
Input: TEXT, or `-` (or no TEXT with a pipe on stdin): one utterance per
non-empty line, each started as soon as its line arrives. `-i FILE`: the
whole file as one utterance; a sentence voice (piper_joe) streams it
sentence by sentence, so a chapter starts as soon as its first sentence:
  omni speak -i chapter.txt -o chapter.wav
\b
Output: `-o FILE` (.wav, .raw, .flac, .mp3, .opus, .aac); several lines go
into the one file in input order. A WAV's header is rewritten after every
chunk and a raw file has none, so a reader mid-run, or a run killed even by
SIGKILL, sees every sample so far. A FLAC, MP3, Opus or AAC file is complete
once the run ends (Ctrl-C and SIGTERM included); read mid-run, or left by
SIGKILL, it is not promised to be readable. `-o - --format mp3` (opus, aac)
streams the encoder's frames as they are made (AAC as ADTS, through PyAV:
the serve extra).
`-o DIR/` or `--out-dir DIR`: one file per utterance, DIR/0001.wav for the
first non-empty line, 0002.wav for the next.
`-o -`: audio on stdout, a WAV with an unknown-length header, or with
`--format raw` headerless s16le mono PCM at the card's rate: 22050 Hz for
the default voice (piper_joe), 24000 Hz for the Qwen2.5-Omni cards (--json
says it):
  omni speak "Hi" -o - --format raw | aplay -f S16_LE -r 22050 -c 1
  omni speak "Hi" -o - --format raw |
    sox -t raw -r 22050 -e signed -b 16 -c 1 - out.wav
Existing files are not overwritten without --force. Without -o the audio is
not kept.
\b
Stdout carries the audio with `-o -`; otherwise the thinker's text, or with
--json one JSON object per utterance (text, path, duration_s, ttfa_s,
work_units, status, reason). The live view and errors go to stderr. A closed
stdout pipe exits quietly with 141. A run that stops early says why
(`stopped: disk full`, `stdout closed`, `interrupted`); the utterances it
cut off have status "stopped" and that reason.
\b
No silent empty results: stdin with only blank lines is bad input (exit 2).
An utterance that ends with no audio (status "no_audio", reason) exits 1
unless --allow-no-audio; a file this run made that got no audio is removed,
and the summary says so (with --allow-no-audio an empty file is kept when
the run ends well).
\b
`--server URL` (or OMNI_SERVER; a key in OMNI_API_KEY): speak on a running
`omni serve` instead of loading the model here; the same outputs and exit
codes. A server that is down or refuses is one error line, exit 1.
\b
Exit status: 0 ok, 1 runtime failure, 2 bad usage or input, 130 SIGINT, 141
stdout closed, 143 SIGTERM. On SIGINT/SIGTERM every file is finalized with
the audio so far.
"""


def speak(
    text: Annotated[str | None, typer.Argument(help="What to say; `-` reads one utterance per stdin line.")] = None,
    input_file: Annotated[str | None, typer.Option("--input", "-i", metavar="FILE",
                                                   help="Speak this UTF-8 text file as one utterance.")] = None,
    output: Annotated[str | None, typer.Option("--output", "-o", metavar="FILE|DIR/|-", rich_help_panel=o.OUTPUT,
                                                  help="Audio file, directory (one file per line), or - for stdout.")] = None,
    out_dir: Annotated[str | None, typer.Option("--out-dir", metavar="DIR", rich_help_panel=o.OUTPUT,
                                                   help="One file per utterance: DIR/0001.wav, DIR/0002.wav, …")] = None,
    fmt: Annotated[o.Format | None, typer.Option("--format", rich_help_panel=o.OUTPUT,
                                                    help="Audio format; default: from the suffix, wav for - and DIR.")] = None,
    as_json: Annotated[bool, typer.Option("--json", rich_help_panel=o.OUTPUT,
                                          help="One JSON object per utterance on stdout.")] = False,
    concurrency: Annotated[int, typer.Option("--concurrency", "-j", min=1, max=256, rich_help_panel=o.REQUEST,
                                             help="Utterances in the engine (in each replica) at once.")] = 4,
    trace: o.Trace = None, force: o.Force = False,
    card: o.Card = DEFAULT_CARD, program: o.Program = None, policy: o.Policy_ = o.Policy.latency_first,
    model_path: o.ModelPath = None, dtype: o.Dtype = None, device: o.Device = None,
    placement: o.Placement = None, ray_address: o.RayAddress = None, replicas: o.Replicas = 1, set_: o.Set = None,
    seed: o.Seed = 0, max_tokens: o.MaxTokens = None, voice: o.Voice = None, mode: o.Mode_ = None,
    handoff: o.Handoff_ = None, speed: o.Speed = None,
    allow_truncation: Annotated[bool, typer.Option(
        "--allow-truncation", rich_help_panel=o.REQUEST,
        help="Exit 0 even when a loop stopped at a cap (max_tokens, max_positions) and cut the speech short.")] = False,
    allow_no_audio: Annotated[bool, typer.Option(
        "--allow-no-audio", rich_help_panel=o.REQUEST,
        help="Exit 0 even when an utterance ends with no audio (said on stderr and in --json either way; "
             "an empty file is then kept).")] = False,
    server: Annotated[str | None, typer.Option(
        "--server", envvar="OMNI_SERVER", metavar="URL", rich_help_panel=o.MODEL,
        help="Speak on a running `omni serve` at URL (e.g. http://127.0.0.1:8000) instead of loading the model.")] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", rich_help_panel=o.DISPLAY,
                                          help="Without a TTY: one stderr line per WorkUnit.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", rich_help_panel=o.DISPLAY,
                                        help="Nothing on stderr but errors.")] = False,
) -> None:
    from .inputs import read_text_file
    from .job import SpeakJob, destination, request_template, resolve_text, run_job
    from .outputs import plan_outputs
    from .session import ModelOptions

    overrides = o.overrides(set_)
    plan = plan_outputs(output, out_dir, fmt.value if fmt else None, force, as_json)
    model = ModelOptions(card, program, policy.value, {"model_path": model_path, "dtype": dtype, "device": device},
                         placement, ray_address, replicas, overrides)
    request = request_template(seed, max_tokens, voice, mode, handoff, speed)
    if input_file is not None:
        text = read_text_file(input_file, text)
    job = SpeakJob(resolve_text(text), model, request, plan, concurrency, trace, quiet, verbose,
                   allow_truncation=allow_truncation, allow_no_audio=allow_no_audio)
    if server:
        outcome, view = _on_server(job, server, card, {
            "program": program, "model_path": model_path, "dtype": dtype, "device": device, "placement": placement,
            "ray_address": ray_address, "replicas": replicas, "set": overrides, "handoff": handoff, "trace": trace})
    else:
        outcome, _, view = run_job(job)
    if outcome.utterances or outcome.stopped:  # stopped before any line arrived: say so, and what was removed
        view.summary(outcome.utterances, destination(plan), outcome.stopped, outcome.removed)
    exit_with(outcome)


def _on_server(job, server: str, card: str, local_options: dict):
    """The job spoken by a running `omni serve` at `server`; options that build an engine here are refused."""
    import os

    from .remote import refuse_local_options, run_remote

    refuse_local_options(local_options)
    outcome, _, view = run_remote(job, server, card, os.environ.get("OMNI_API_KEY"))
    return outcome, view
