"""`omni cards list|show|validate` and `omni programs list|show|validate`: what is installed, and is it valid."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from . import examples
from . import options as o
from .errors import USAGE, one_line
from .report import error_line
from .term import inert

cards = typer.Typer(help="Model cards: what each deployable model is.", epilog=examples.CARDS, no_args_is_help=True, rich_markup_mode=None)

programs = typer.Typer(help="Programs: the task graph a request runs through.", epilog=examples.PROGRAMS,
                       no_args_is_help=True, rich_markup_mode=None)

NameArg = Annotated[str, typer.Argument(metavar="NAME|PATH", help="A shipped name or a YAML path.")]


def say(text: str) -> None:
    """A line (or lines) of card or program text, made inert: no escape sequence from a file reaches the terminal."""
    typer.echo("\n".join(inert(part) for part in str(text).split("\n")))


def columns(rows: list[tuple[str, ...]], indent: str = "", block=None) -> None:
    """Rows of file text, made inert, fitted to the terminal (one line per row to a pipe)."""
    from .fit import terminal_width
    from .lean import table_lines

    for line in table_lines(rows, terminal_width(), indent, block):
        typer.echo(line)


@cards.command("list", epilog=examples.CARDS_LIST)
def cards_list() -> None:
    """List the shipped cards: name, backend, voices, description; the default is marked."""
    from .lean import card_rows  # `omni cards list` itself is answered by lean.py, from these rows kept

    columns(card_rows()[0])


@cards.command("show", epilog=examples.CARDS_SHOW)
def cards_show(name: NameArg, params: bool = typer.Option(
        False, "--params", help="instead: every key the card may set, its value here, what it accepts and does"),
        set_: o.Set = None) -> None:
    """Show a card: its file, components, loops, voices, defaults and limits."""
    from ..program import load_card_file, resolve

    path = resolve("cards", name)
    card = load_card_file(str(path), o.overrides(set_))
    if params:
        from .card_params import as_param_block, param_rows

        say(f"{card.model}  ({path})\nkeys it may set (value, accepts, does):")
        columns(param_rows(card), indent="  ", block=as_param_block)
        return
    from functools import partial

    from .fit import terminal_width

    echo = partial(_wrapped, width=terminal_width())
    echo(f"{card.model}  ({path})\n  {card.description}")
    echo(f"sample rate {card.sample_rate} Hz, seed {card.seed}, capabilities: {', '.join(card.capabilities) or '-'}")
    echo(f"voices: {', '.join(card.voices) or '-'} (default {card.defaults.voice or '-'})")
    echo(f"defaults: program {card.defaults.program}, mode {card.defaults.mode}")
    echo("components:")
    for cname, comp in card.components.items():
        params = ", ".join(f"{k}={v}" for k, v in comp.params.items())
        echo(f"  {cname}: {comp.role} on {comp.backend}" + (f" ({params})" if params else ""))
    echo("loops:")
    for lname, loop in card.loops.items():
        echo(_loop_line(lname, loop))
    echo(f"limits: text {card.limits.max_text_chars} chars, memory {card.limits.memory_budget_mib} MiB; "
         f"batching: max {card.batching.max_batch}")


def _wrapped(text: str, width: int | None) -> None:
    """On a terminal, long lines wrap under their item, indented."""
    import textwrap

    for line in text.split("\n"):
        lead = " " * (len(line) - len(line.lstrip()))
        say("\n".join(textwrap.wrap(line, width, initial_indent="", subsequent_indent=lead + "    ",
                                     break_on_hyphens=False)) if width and len(line) > width else line)


def _loop_line(name: str, loop) -> str:
    """A card's loop: its kind, component, units and what its kind says of its settings (`Loop.describe`)."""
    from ..loops import LOOP_KINDS

    kind = LOOP_KINDS.get(loop.kind)  # a card may leave work_unit out: it follows from the kind
    units = kind.work_unit if kind is not None else loop.work_unit
    extra = kind.describe(loop) if kind is not None else ""
    return f"  {name}: {loop.kind} over {loop.component}, {units} units, prompt {loop.prompt_slot}{extra}"


@cards.command("validate", epilog=examples.CARDS_VALIDATE)
def cards_validate(names: Annotated[list[str] | None, typer.Argument(
        metavar="[NAME|PATH]...", help="Cards to check; default: every shipped card.")] = None,
        set_: o.Set = None) -> None:
    """Check cards (and their default program) and print every issue as file:line: key: message.

    Exit status 2 if any card has an issue.
    """
    from ..program import list_files, load_checked

    overrides = o.overrides(set_)
    _validate("card", names or [str(p) for p in list_files("cards")], lambda name: load_checked(name, None, overrides))


def _validate(kind: str, targets: list[str], check) -> None:
    """Run `check(name)` for each target; print every issue of each (no weights are loaded)."""
    from ..spec import SpecError

    bad = 0
    for name in targets:
        try:
            check(name)
        except SpecError as exc:
            bad += 1
            for issue in exc.issues:
                sys.stderr.write(f"{inert(one_line(issue))}\n")
        else:
            typer.echo(f"ok {name}")
    if bad:
        error_line(f"{bad} of {len(targets)} {kind}{'s' if len(targets) != 1 else ''} invalid")
        raise typer.Exit(USAGE)


@programs.command("validate", epilog=examples.PROGRAMS_VALIDATE)
def programs_validate(names: Annotated[list[str] | None, typer.Argument(
        metavar="[NAME|PATH]...", help="Programs to check; default: every shipped program.")] = None,
        card: str | None = typer.Option(None, "--card", "-c", metavar="NAME|PATH", help="The card to check them "
                                        "against; default: a shipped card with the capabilities each one requires.")) -> None:
    """Check programs against a card and print every issue as file:line: key: message.

    Exit status 2 if any program has an issue.
    """
    from ..program import card_for, list_files, load_card_file, load_checked

    if card is not None:
        load_card_file(card)  # a bad card is one error, not the same issues under every program
    _validate("program", names or [str(p) for p in list_files("programs")],
              lambda name: load_checked(card or card_for(name), name))


@programs.command("list", epilog=examples.PROGRAMS_LIST)
def programs_list() -> None:
    """List the shipped programs."""
    from ..program import list_files, load_program_file
    from ..spec import SpecError

    rows = [("NAME", "REQUIRES", "DESCRIPTION")]
    for path in list_files("programs"):
        try:
            prog = load_program_file(str(path))
            rows.append((path.stem, ",".join(prog.requires) or "-", prog.description))
        except SpecError as exc:
            rows.append((path.stem, "?", f"(invalid: {exc})"))
    columns(rows)


@programs.command("show", epilog=examples.PROGRAMS_SHOW)
def programs_show(name: NameArg) -> None:
    """Show a program's nodes in run order: op or loop, inputs -> output, hand-off mode."""
    from ..program import load_program_file, resolve
    from ..spec import topological_order

    path = resolve("programs", name)
    prog = load_program_file(str(path))
    say(f"{prog.program}  ({path})\n  {prog.description}")
    say(f"inputs: {', '.join(prog.inputs)}; requires: {', '.join(prog.requires) or '-'}")
    for node in topological_order(prog):
        what = f"op {node.op}" if node.op else f"loop {node.loop}"
        flow = f"{', '.join(node.inputs) or '-'} -> {node.output or '-'}"
        mode = f"  [{node.mode}]" if node.mode else ""
        say(f"  {node.id:<18} {what:<24} {flow}{mode}")
