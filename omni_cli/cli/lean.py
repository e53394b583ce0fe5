"""`omni --help`, `omni -h`, `omni --version` and `omni cards list`, answered without importing typer.

Importing typer (and the pydantic it checks options with) and every command's module takes longer than these
answers may. Their text is a function of omni's code, the card files and the terminal, so the full CLI makes
it once (`full_help`, `card_rows`: the same code the typer commands print through) and it is kept in omni's
cache under a key naming all of those; a later run with the same key prints it. The table of cards is kept as
rows and fitted to the terminal on each run. Nothing but these exact argument lists comes here, and anything
the cache cannot answer goes the slow way, never a guess.
"""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

from .. import __version__

LEAN = {("--help",): "help", ("-h",): "help", ("--version",): "version", ("cards", "list"): "cards"}
_PACKAGE = Path(__file__).resolve().parent.parent
# environment that may change what the full CLI prints (the width is read apart, as click reads it)
_ENV = ("COLUMNS", "LINES", "TERM", "NO_COLOR", "FORCE_COLOR", "LANG", "LC_ALL", "LC_CTYPE", "PYTHONIOENCODING")


def version_line() -> str:
    return f"omni {__version__}"


def serve(argv: list[str]) -> int | None:
    """The exit status after printing the answer to `argv`, or None when it is not one answered here."""
    kind = LEAN.get(tuple(argv))
    if kind is None:
        return None
    if kind == "version":
        text = version_line() + "\n"
    elif kind == "help":
        text = remembered(f"help\0{_code_key()}\0{_typer_key()}\0{_terminal_key()}", full_help)
    else:
        from .fit import terminal_width

        text = "".join(line + "\n" for line in table_lines(remembered_rows(), terminal_width()))
    return _write(text)


def _write(text: str) -> int:
    from .errors import OK, PIPE_CLOSED

    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:  # `omni --help | head -1`: quiet, as every command
        from .runner import quiet_stdout

        quiet_stdout()
        return PIPE_CLOSED
    return OK


def full_help() -> str:
    """`omni --help` as the typer app prints it (its help callback echoes `ctx.get_help()` and a newline)."""
    from typer.main import get_command

    from .app import app

    command = get_command(app)
    context = command.context_class(command, info_name="omni", **command.context_settings)
    return context.get_help() + "\n"


def card_rows() -> tuple[list[tuple[str, ...]], list[Path]]:
    """The rows `omni cards list` prints (name, backend, voices, description; the default marked) and the
    folders they were read from."""
    from ..defaults import CARD_ENV, DEFAULT_CARD
    from ..program import list_files, load_card_file
    from ..program.catalog import data_dirs
    from ..spec import SpecError

    default = os.environ.get(CARD_ENV) or DEFAULT_CARD
    rows = [("NAME", "BACKEND", "VOICES", "DESCRIPTION")]
    for path in list_files("cards"):
        try:
            card = load_card_file(str(path))
        except SpecError as exc:
            rows.append((path.stem, "?", "?", f"(invalid: {exc}; see `omni cards validate {path.stem}`)"))
            continue
        backends = ",".join(sorted({c.backend for c in card.components.values()}))
        name = f"{path.stem} (default)" if path.stem == default else path.stem
        rows.append((name, backends, ",".join(card.voices) or "-", card.description))
    return rows, data_dirs("cards")


def table_lines(rows: list[tuple[str, ...]], width: int | None, indent: str = "", block=None) -> list[str]:
    """Rows of file text, made inert, fitted to `width` (one line per row without one)."""
    from .fit import as_block, fit_columns
    from .term import inert

    return fit_columns([tuple(inert(c) for c in row) for row in rows], width, indent, block or as_block)


def remembered_rows() -> list[tuple[str, ...]]:
    """`card_rows()`, from the cache while no card file (nor the folders they are in) has changed."""
    import json

    from ..defaults import CARD_ENV

    key = f"cards\0{_code_key()}\0{os.environ.get(CARD_ENV, '')}"
    found = _load(key)
    try:
        record = json.loads(found) if found is not None else {}
        if record and record["files"] == _stats(record["folders"]):
            return [tuple(row) for row in record["rows"]]
    except (ValueError, KeyError, TypeError):
        pass  # not a record this code wrote: made again
    rows, folders = card_rows()
    record = {"rows": rows, "folders": [str(f) for f in folders], "files": _stats([str(f) for f in folders])}
    _keep(key, json.dumps(record))
    return rows


def remembered(key: str, make) -> str:
    """The text kept under `key`, else `make()` (kept for the next run)."""
    found = _load(key)
    if found is not None:
        return found
    text = make()
    _keep(key, text)
    return text


def _entry(key: str) -> Path:
    from .. import cache

    return cache.cache_dir("cli") / hashlib.sha256(key.encode()).hexdigest()[:40]


def _load(key: str) -> str | None:
    from .. import cache

    try:
        data = cache.read_verified(_entry(key))
        return None if data is None else data.decode()
    except (cache.CacheRefused, OSError, UnicodeDecodeError):
        return None


def _keep(key: str, text: str) -> None:
    from .. import cache

    try:
        cache.write_artifact(_entry(key), text.encode())
    except (cache.CacheRefused, OSError):
        pass  # made again next time


def _stats(folders: list[str]) -> list[list]:
    """Each folder's entries with their size and modification time (a card added, removed or edited shows)."""
    out: list[list] = []
    for folder in folders:
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            out.append([folder, None])
            continue
        out.append([folder, [[e.name, *_stat(e)] for e in entries]])
    return out


def _stat(entry: os.DirEntry) -> list[int]:
    info = entry.stat()
    return [info.st_size, info.st_mtime_ns]


def _code_key() -> str:
    """omni's own code as installed: every module's size and modification time, and the interpreter's version."""
    parts = [sys.version, __version__]
    folders = [str(_PACKAGE)]
    while folders:
        with os.scandir(folders.pop()) as entries:
            for entry in entries:
                if entry.is_dir() and entry.name != "__pycache__":
                    folders.append(entry.path)
                elif entry.name.endswith(".py"):
                    info = entry.stat()
                    parts.append(f"{entry.path}:{info.st_size}:{info.st_mtime_ns}")
    return hashlib.sha256("\n".join(sorted(parts)).encode()).hexdigest()


def _typer_key() -> str:
    """Which typer renders the help: its installed files' place, size and modification time."""
    from importlib.machinery import PathFinder

    spec = PathFinder.find_spec("typer")
    origin = spec.origin if spec is not None and spec.origin else ""
    info = os.stat(origin) if origin else None
    return f"{origin}:{info.st_size}:{info.st_mtime_ns}" if info else "none"


def _terminal_key() -> str:
    """What click's width comes from (COLUMNS, else the size of the terminal on the process's stdout, as
    `shutil.get_terminal_size` reads it) and the environment that may change what it prints."""
    try:
        size = tuple(os.get_terminal_size(sys.__stdout__.fileno()))
    except (AttributeError, ValueError, OSError):
        size = None
    env = "\0".join(f"{name}={os.environ.get(name, '')}" for name in _ENV)
    return f"{size}\0{sys.stdout.isatty()}\0{env}"
