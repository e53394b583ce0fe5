"""Options shared by the commands that run the model (`speak`, `trace`), as typer annotations."""

from __future__ import annotations

from enum import Enum
from typing import Annotated

import typer

from ..defaults import CARD_ENV

MODEL = "Model"
REQUEST = "Request"
OUTPUT = "Output"
DISPLAY = "Display"


class Mode(str, Enum):
    echo = "echo"
    chat = "chat"


class Handoff(str, Enum):
    stream = "stream"
    barrier = "barrier"


class Policy(str, Enum):
    latency_first = "latency-first"
    round_robin = "round-robin"


class Format(str, Enum):
    wav = "wav"
    raw = "raw"
    flac = "flac"
    mp3 = "mp3"
    opus = "opus"
    aac = "aac"


Card = Annotated[str, typer.Option("--card", "-c", metavar="NAME|PATH", rich_help_panel=MODEL, envvar=CARD_ENV,
                                   help="Model card: a shipped name (`omni cards list`) or a YAML path.")]
Program = Annotated[str | None, typer.Option("--program", "-p", metavar="NAME|PATH", rich_help_panel=MODEL,
                                                help="Program (task graph); default: the card's.")]
ModelPath = Annotated[str | None, typer.Option("--model-path", metavar="DIR", rich_help_panel=MODEL,
                                                  help="Checkpoint directory (hf cards only).")]
Dtype = Annotated[str | None, typer.Option("--dtype", rich_help_panel=MODEL,
                                              help="Weights dtype, e.g. float32, bfloat16 (hf cards only).")]
Device = Annotated[str | None, typer.Option("--device", rich_help_panel=MODEL,
                                               help="Device, e.g. cpu, cuda (hf cards only).")]
Placement = Annotated[str | None, typer.Option(
    "--placement", metavar="KIND|NAME=KIND,…", rich_help_panel=MODEL,
    help="Where components run: inline, thread, process or ray; for all (`--placement ray`) or some "
         "(`thinker=process,vocoder=thread`); `process:N` runs N workers of it (`vocoder=process:2`). "
         "Default: the card's `placement`, else inline.")]
RayAddress = Annotated[str | None, typer.Option(
    "--ray-address", metavar="auto|HOST:PORT", rich_help_panel=MODEL,
    help="Join this Ray cluster for components placed on ray; default: start a local Ray.")]
MAX_REPLICAS = 64  # each replica holds the whole model: more than this is a typo, not a plan
Replicas = Annotated[int, typer.Option(
    "--replicas", min=1, max=MAX_REPLICAS, rich_help_panel=MODEL,
    help="Whole engines to spread the lines over (each with its own copy of the model and -j utterances): "
         "local processes, or Ray actors with --ray-address or --placement ray. Same files as one engine.")]
Policy_ = Annotated[Policy, typer.Option("--policy", rich_help_panel=MODEL, help="Scheduling policy.")]
Set = Annotated[list[str] | None, typer.Option(
    "--set", metavar="KEY=VALUE", rich_help_panel=MODEL, show_default=False,
    help="Change one of the card's values for this command, the file left as it is: KEY as `omni cards show "
         "NAME --params` lists it, VALUE as YAML (`--set loops.vocoder.chunk_codes=48`). "
         "Repeatable; checked as the card is.")]


def overrides(given: list[str] | None) -> dict[str, object]:
    """`--set`'s KEY=VALUE pairs by key (the last of a key wins); CliError naming `--set` for a bad one."""
    from ..spec import SpecError
    from ..spec.overrides import parse_override
    from .errors import CliError

    pairs: dict[str, object] = {}
    for text in given or []:
        try:
            key, value = parse_override(text)
        except SpecError as exc:
            raise CliError(str(exc.issues[0])) from None
        pairs[key] = value
    return pairs
Seed = Annotated[int, typer.Option("--seed", "-s", min=0, max=2**32 - 1, rich_help_panel=REQUEST,
                                   help="Sampling seed: same seed, same audio.")]
MaxTokens = Annotated[int | None, typer.Option("--max-tokens", min=1, rich_help_panel=REQUEST,
                                                  help="Cap on the thinker's tokens per utterance.")]
Voice = Annotated[str | None, typer.Option("--voice", rich_help_panel=REQUEST,
                                              help="Voice; default: the card's (`omni cards show`).")]
Speed = Annotated[float | None, typer.Option("--speed", min=0.25, max=4.0, rich_help_panel=REQUEST,
                                               help="Speaking rate of a sentence voice (piper cards): 1.5 speaks "
                                                    "half again as fast. VITS's length scale, not a resample.")]
Mode_ = Annotated[Mode | None, typer.Option("--mode", rich_help_panel=REQUEST,
                                               help="echo: speak the text; chat: speak a reply. Default: the card's.")]
Handoff_ = Annotated[Handoff | None, typer.Option("--handoff", rich_help_panel=REQUEST,
                                                     help="Stage hand-off; default: as the program says.")]
Trace = Annotated[str | None, typer.Option("--trace", metavar="FILE", rich_help_panel=OUTPUT,
                                              help="Write a JSON Lines trace: a run record, then one record per "
                                                   "WorkUnit and request phase, flushed as the run goes.")]
Force = Annotated[bool, typer.Option("--force", "-f", rich_help_panel=OUTPUT,
                                     help="Overwrite existing output files (without it, omni refuses).")]
