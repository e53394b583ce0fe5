"""The `omni` app: its commands, and `main()`, which turns every outcome into one line and an exit code."""

from __future__ import annotations

import os
import sys

import typer
from typer.core import TyperGroup

from . import bench, catalog, chat, examples, rollout, serve, speak, trace
from .errors import SIGINT_EXIT, USAGE, classify, one_line
from .lean import version_line
from .report import error_line

HELP = """omni: a step-level runtime for omni speech models (thinker -> talker -> vocoder).

Speaks with the card `omni cards list` marks as the default (Piper's joe voice)
unless --card or OMNI_CARD names another. Every error is one line on stderr; add --debug (anywhere) for the traceback.
"""


class OmniGroup(TyperGroup):
    """Runs click without its own error printing, so every failure is one `omni: error:` line."""

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        argv = list(sys.argv[1:] if args is None else args)
        debug = pop_debug(argv) or os.environ.get("OMNI_DEBUG", "") not in ("", "0")
        sys.exit(run(super().main, argv, prog_name or "omni", debug, complete_var=complete_var, **extra))

    def invoke(self, ctx):
        # click turns a closed stdout into exit 1 before run() could see it: take it first
        try:
            result = super().invoke(ctx)
            sys.stdout.flush()  # here, not at exit, so a reader that left is seen
            return result
        except BrokenPipeError as exc:
            raise StdoutClosed from exc


def refuse_empty_values(argv: list[str]) -> None:
    """`--trace ""`, `-o ""`, `--program=`: an empty option value is a mistake, never "use the default"
    (neither silently ignored nor an internal error). An empty TEXT says so itself."""
    end = argv.index("--") if "--" in argv else len(argv)
    for i, arg in enumerate(argv[:end]):
        if arg.startswith("--") and arg.endswith("=") and len(arg) > 3:
            raise typer.BadParameter("an empty value", param_hint=arg[:-1])
        if arg == "" and i and argv[i - 1].startswith("-") and argv[i - 1] != "-":
            raise typer.BadParameter("an empty value", param_hint=argv[i - 1])


class StdoutClosed(Exception):
    """The reader of stdout went away (`| head`): every command exits quietly with 141."""


def pop_debug(argv: list[str]) -> bool:
    """Remove `--debug` wherever it is before a `--`."""
    end = argv.index("--") if "--" in argv else len(argv)
    found = "--debug" in argv[:end]
    argv[:] = [a for a in argv[:end] if a != "--debug"] + argv[end:]
    return found


def run(click_main, argv: list[str], prog_name: str, debug: bool, **extra) -> int:
    try:
        refuse_empty_values(argv)
        result = click_main(args=argv, prog_name=prog_name, standalone_mode=False, **extra)
        return result if isinstance(result, int) else 0
    except typer.Exit as exc:
        return exc.exit_code
    except StdoutClosed:
        from .errors import PIPE_CLOSED
        from .runner import quiet_stdout

        quiet_stdout()
        return PIPE_CLOSED
    except typer.Abort:
        error_line("aborted")
        return 1
    except KeyboardInterrupt:
        return SIGINT_EXIT
    except typer.TyperException as exc:  # click's usage errors: one line, with where to look
        ctx = getattr(exc, "ctx", None)
        if type(exc).__name__ == "NoArgsIsHelpError" and ctx is not None:
            sys.stderr.write(ctx.get_help() + "\n")
            return USAGE
        hint = f" (see `{ctx.command_path} --help`)" if ctx is not None else ""
        error_line(one_line(exc.format_message()) + hint)
        return getattr(exc, "exit_code", USAGE)
    except Exception as exc:
        from ..audio.errors import OutputClosed

        if isinstance(exc, (OutputClosed, BrokenPipeError)):  # the reader left before the run began (`| true`)
            from .errors import PIPE_CLOSED
            from .runner import quiet_stdout

            quiet_stdout()
            return PIPE_CLOSED
        if debug:
            import traceback

            traceback.print_exc()
        code, message = classify(exc)
        error_line(message)
        return code


app = typer.Typer(cls=OmniGroup, help=HELP, epilog=examples.ROOT, rich_markup_mode=None, no_args_is_help=True,
                  pretty_exceptions_enable=False, add_completion=False,
                  context_settings={"help_option_names": ["-h", "--help"]})


def _version(value: bool) -> None:
    if value:
        typer.echo(version_line())
        raise typer.Exit()


@app.callback()
def _root(version: bool = typer.Option(False, "--version", is_eager=True, callback=_version,
                                       help="Print omni's version and exit.")) -> None:
    # the root's own options; `omni --version` alone is answered by lean.py, with the same line
    pass


app.command("speak", help=speak.HELP, epilog=examples.SPEAK, no_args_is_help=False)(speak.speak)
app.command("chat", help=chat.HELP, epilog=examples.CHAT, no_args_is_help=False)(chat.chat)
app.add_typer(trace.app, name="trace")
app.add_typer(catalog.cards, name="cards")
app.add_typer(catalog.programs, name="programs")
app.command("bench", help=bench.HELP, epilog=examples.BENCH)(bench.bench)
app.add_typer(rollout.app, name="rollout")
app.command("serve", help=serve.HELP, epilog=examples.SERVE)(serve.serve)


def main() -> None:
    app()
