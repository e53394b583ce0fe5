"""`omni rollout`: K samples per prompt with every step's behaviour recorded; `omni rollout score`: re-score them."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from typer.core import TyperGroup

from . import examples
from . import options as o
from .errors import FAILURE, CliError

HELP = """Rollouts for reinforcement learning: samples with each step's log-probabilities.

Runs the toy card unless --card (or OMNI_CARD) names another token cascade.

`omni rollout PROMPTS` is short for `omni rollout run PROMPTS`.
"""


class RolloutGroup(TyperGroup):
    """`omni rollout PROMPTS …` runs `omni rollout run PROMPTS …`."""

    def parse_args(self, ctx, args):
        if args and args[0] not in self.commands and args[0] not in ("-h", "--help"):
            args = ["run", *args]
        return super().parse_args(ctx, args)


app = typer.Typer(cls=RolloutGroup, help=HELP, epilog=examples.ROLLOUT, no_args_is_help=True, rich_markup_mode=None)

Out = Annotated[str, typer.Option("--out", "-o", metavar="DIR", rich_help_panel=o.OUTPUT,
                                  help="Directory for the samples (created if missing).")]
Concurrency = Annotated[int, typer.Option("--concurrency", "-j", min=1, max=256, rich_help_panel=o.REQUEST,
                                          help="Samples in the engine at once (their steps batch together).")]


@app.command("run", epilog=examples.ROLLOUT_RUN)
def run(
    prompts: Annotated[str, typer.Argument(metavar="PROMPTS", help="File of prompts, one per line, or - for stdin.")],
    out: Out,
    samples: Annotated[int, typer.Option("--samples", "-k", min=1, max=4096, rich_help_panel=o.REQUEST,
                                         help="Samples per prompt, each with its own seed.")] = 4,
    concurrency: Concurrency = 8, force: o.Force = False,
    card: o.Card = "qwen2_5_omni_toy", program: o.Program = None, policy: o.Policy_ = o.Policy.latency_first,
    model_path: o.ModelPath = None, dtype: o.Dtype = None, device: o.Device = None,
    placement: o.Placement = None, ray_address: o.RayAddress = None,
    seed: o.Seed = 0, max_tokens: o.MaxTokens = None, voice: o.Voice = None, mode: o.Mode_ = None,
    handoff: o.Handoff_ = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", rich_help_panel=o.DISPLAY, help="No progress on stderr.")] = False,
) -> None:
    """Sample every prompt K times through one engine; save each sample's audio and behaviour.

    \b
    PROMPTS: one text per line, or JSON objects, one per line, with per-prompt
    fields: {"text": "Hi", "voice": "tenor", "mode": "chat", "max_tokens": 64,
    "handoff": "barrier", "seed": 7}. Sample k of prompt i gets seed
    SEED + i*K + k (or the prompt's seed + k). Prompts are read as the run
    needs them, so PROMPTS may be a pipe that never ends (SIGINT or SIGTERM
    stop it); a line is at most 64 KiB. A file's lines are checked whole
    before the first sample runs; a prompt the card refuses (an unknown
    voice) stops the run where it is read, the samples before it kept.
    \b
    DIR gets, per sample, pNNNN_sKKK.npz (behaviour columns per loop, float32
    audio, a JSON header under "meta"), pNNNN_sKKK.wav, and one line in
    rollout.jsonl. Progress goes to stderr. Exit 1 if any sample failed.
    """
    from ..rollout.prompts import PromptError, iter_prompts, read_lines
    from .session import ModelOptions

    name, count = prompts if prompts != "-" else "<stdin>", None
    with _open_prompts(prompts) as stream:
        if _is_file(stream):  # a file is read through once first: a bad line stops the run before any output
            try:
                count = sum(1 for _ in iter_prompts(read_lines(stream, name), name))
            except PromptError as exc:
                raise CliError(str(exc)) from None
            if not count:
                raise CliError(f"{prompts}: no prompts (every line is empty)")
            stream.seek(0)
        saved = _run(stream, name, _out_dir(Path(out), force),
                     ModelOptions(card, program, policy.value,
                                  {"model_path": model_path, "dtype": dtype, "device": device},
                                  placement, ray_address),
                     samples=samples, num_prompts=count, seed=seed, concurrency=concurrency, quiet=quiet,
                     defaults={"mode": mode.value if mode else None, "voice": voice, "max_tokens": max_tokens,
                               "handoff": handoff.value if handoff else None})
    if not saved:
        raise CliError(f"{prompts}: no prompts (every line is empty)")
    target = Path(out)
    failed = [info for info in saved if info.status != "finished"]
    if not quiet:
        _stderr(f"{len(saved)} samples in {target}/ ({len(saved) - len(failed)} finished, {len(failed)} not)")
    if failed:
        raise CliError(f"{len(failed)} of {len(saved)} samples did not finish (see their status in "
                       f"{target}/rollout.jsonl)", FAILURE)


@app.command("score", epilog=examples.ROLLOUT_SCORE)
def score(
    directory: Annotated[str, typer.Argument(metavar="DIR", help="A directory written by `omni rollout`.")],
    out: Annotated[str | None, typer.Option("--out", "-o", metavar="DIR", rich_help_panel=o.OUTPUT,
                                               help="Save each sample's re-scored columns here.")] = None,
    concurrency: Concurrency = 8, force: o.Force = False,
    card: Annotated[str | None, typer.Option("--card", "-c", metavar="NAME|PATH", rich_help_panel=o.MODEL,
                                                help="Score under this card; default: the recorded one.")] = None,
    model_path: o.ModelPath = None, dtype: o.Dtype = None, device: o.Device = None,
    tolerance: Annotated[float | None, typer.Option("--tolerance", min=0.0, rich_help_panel=o.OUTPUT,
                                                       help="Largest allowed difference; default 0 on numpy "
                                                            "cards, 1e-5 on hf.")] = None,
) -> None:
    """Teacher-force the recorded tokens and recompute every log-probability.

    \b
    Under the recorded card the numbers must equal the recorded ones (exit 1 if
    any differs by more than the tolerance). Under another card (--card) they are
    the new weights' log-probabilities of the same tokens: save them with --out.
    One line per sample on stdout.
    """
    from .rollout_score import run_score

    run_score(Path(directory), Path(out) if out else None, card, {"model_path": model_path, "dtype": dtype,
                                                                  "device": device}, concurrency, tolerance, force)


def _run(stream, name: str, target: Path, model, *, samples: int, num_prompts: int | None, seed: int, concurrency: int, quiet: bool,
         defaults: dict) -> list:
    """The run, its prompts read from `stream` as it needs them (a pipe that never ends takes bounded memory;
    SIGTERM and SIGINT end it at once, as at start-up)."""
    from ..rollout import rollout
    from ..rollout.prompts import PromptError, iter_prompts, read_lines
    from .session import open_engine

    engine = open_engine(model)
    try:
        return rollout(engine, iter_prompts(read_lines(stream, name), name), samples, target, seed=seed,
                       concurrency=concurrency, defaults=defaults, on_sample=None if quiet else _progress,
                       num_prompts=num_prompts)
    except PromptError as exc:
        raise CliError(str(exc)) from None
    finally:
        engine.close()  # workers, processes and Ray actors go with the run


def _open_prompts(source: str):
    """The prompts as a binary stream (stdin for `-`), read line by line."""
    from contextlib import nullcontext

    if source == "-":
        return nullcontext(sys.stdin.buffer)
    try:
        return open(source, "rb")  # the caller's `with` closes it
    except OSError as exc:
        raise CliError(f"{source}: {exc.strerror or exc}") from None


def _is_file(stream) -> bool:
    """A regular file (read twice: checked, then run), not a pipe, a terminal or a device such as /dev/zero."""
    import os
    import stat

    try:
        return stat.S_ISREG(os.fstat(stream.fileno()).st_mode)
    except (OSError, ValueError):
        return False


def _out_dir(path: Path, force: bool) -> Path:
    """Create DIR, or refuse one that already holds a run (a second run would mix with it)."""
    if path.exists() and not path.is_dir():
        raise CliError(f"--out {path}: exists and is not a directory")
    if path.is_dir() and not force and (any(path.glob("*.npz")) or (path / "rollout.jsonl").exists()):
        raise CliError(f"--out {path}: already holds a rollout (use --force to write over it)")
    try:
        path.mkdir(parents=True, exist_ok=True)
        for old in [*path.glob("p[0-9][0-9][0-9][0-9]_s[0-9][0-9][0-9].*")]:  # --force: the old run's samples only
            old.unlink()
    except OSError as exc:
        raise CliError(f"--out {path}: {exc.strerror or exc}", FAILURE) from None
    return path


def _progress(info) -> None:
    tokens = ", ".join(f"{loop} {n}" for loop, n in info.num_tokens.items())
    _stderr(f"[{info.done}/{info.total if info.total is not None else '?'}] {info.path.stem} seed {info.seed}: {info.status} ({tokens} tokens)")


def _stderr(line: str) -> None:
    sys.stderr.write(line + "\n")
    sys.stderr.flush()
