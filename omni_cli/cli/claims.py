"""Claim every output of a run before touching any: check them all, then open them so a failure undoes itself.

A bad `--trace` path must not fail after `-o prior.wav --force` has already cut the WAV to a header,
nor `-o x.wav --trace x.wav` splice JSON into the audio. So every output (the audio file
or directory, stdout, the trace) is checked first with nothing opened: existence and `--force`, a
parent that is a directory, and that no two outputs are one file (paths resolved, symlinks and hard
links included). Then they are opened cheapest-to-lose first (devices and pipes, which hold nothing;
then new files; existing files last), so a device that fails its first write (`/dev/full`) fails
before any existing file is truncated; on any failure the files and directories this run created
are removed again.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import FAILURE, USAGE, CliError

NEW, DEVICE, PIPE, FILE, DIR = "new", "device", "pipe", "file", "dir"
# what a failure would cost, least first; an out-dir before new files, which may go into it
OPEN_ORDER = {DEVICE: 0, PIPE: 0, DIR: 1, NEW: 2, FILE: 3}


@dataclass
class Claim:
    flag: str  # the option that named it: -o, --out-dir, --trace
    path: Path
    is_dir: bool = False  # an out-dir: the run writes numbered files into it
    kind: str = NEW  # what is there now: new | device | pipe | file | dir
    identity: tuple[int, int] | None = None  # (st_dev, st_ino) of what exists, to spot one file under two names


@dataclass
class Claims:
    """The outputs of one run, checked; `open_all` opens them in a safe order."""

    claims: list[Claim] = field(default_factory=list)
    created: list[tuple[str, Path]] = field(default_factory=list)  # (flag, path) made by this run, in order

    def kind(self, flag: str) -> str | None:
        return next((c.kind for c in self.claims if c.flag == flag), None)

    def open_all(self, openers: dict[str, Callable[[], Any]]) -> dict[str, Any]:
        """Call each output's opener (it returns something with `close()`) cheapest-to-lose first.

        If one fails, everything opened is closed and every file or directory this run made is removed.
        """
        # an opener with no claim (stdout, no audio at all) has nothing on disk to lose
        order = sorted(openers, key=lambda flag: OPEN_ORDER[self.kind(flag) or DEVICE])
        opened: dict[str, Any] = {}
        try:
            for flag in order:
                claim = next((c for c in self.claims if c.flag == flag), None)
                if claim is not None and claim.kind in (NEW, DIR):
                    self._note_new(claim)
                opened[flag] = openers[flag]()
        except BaseException:
            for thing in opened.values():
                _quietly(thing.close)
            self.undo()
            raise
        return opened

    def undo(self, flag: str | None = None) -> list[Path]:
        """Remove what this run made (only for `flag`'s output when given): files, and directories left
        empty. Returns what is gone; a directory something else still holds stays."""
        gone = []
        for made_by, path in reversed(self.created):
            if (flag is None or made_by == flag) and os.path.lexists(path):
                _quietly(path.rmdir if path.is_dir() else path.unlink)
                if not os.path.lexists(path):
                    gone.append(path)
        self.created = [(f, p) for f, p in self.created if f != flag] if flag is not None else []
        return gone

    def _note_new(self, claim: Claim) -> None:
        # the directories that do not exist yet (out-dir and its parents, made by make_dir), or the file
        missing = [p for p in [claim.path, *claim.path.parents] if not os.path.lexists(p)]
        self.created.extend((claim.flag, p) for p in reversed(missing))


def claim_outputs(outputs: list[tuple[str, Path, bool]], force: bool, numbered: Callable[[str], bool],
                  stdout_fd: int | None = 1) -> Claims:
    """Check the run's outputs, (flag, path, is an out-dir) each, with nothing opened or made.

    `numbered(name)` says which names in the out-dir a run writes; `stdout_fd` is the descriptor that
    carries the run's text or audio (None: nothing), which no file output may also be.
    """
    claims = Claims()
    out_dirs = [os.path.abspath(path) for _, path, is_dir in outputs if is_dir]
    for flag, path, is_dir in sorted(outputs, key=lambda o: not o[2]):  # the out-dir first
        claim = _check(flag, path, force, is_dir, out_dirs)
        if claim.kind == DIR and claim.identity is not None and not force:
            _refuse_numbered(claim, numbered)
        claims.claims.append(claim)
    _refuse_shared(claims.claims, numbered, stdout_fd)
    return claims


def _check(flag: str, path: Path, force: bool, is_dir: bool, out_dirs: list[str]) -> Claim:
    claim = Claim(flag, path, is_dir)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        if is_dir:
            claim.kind = DIR
        _check_parent(path, is_dir, out_dirs)
        return claim
    except OSError as exc:  # a parent that is a file, a loop of links, no permission
        raise CliError(f"cannot {'create' if is_dir else 'write'} {path}: {exc.strerror or exc}", FAILURE) from exc
    claim.identity = (st.st_dev, st.st_ino)
    if stat.S_ISDIR(st.st_mode):
        if not is_dir:
            raise CliError(f"cannot write {path}: it is a directory", FAILURE)
        claim.kind = DIR
    elif is_dir:
        raise CliError(f"cannot create {path}: it exists and is not a directory", FAILURE)
    elif stat.S_ISREG(st.st_mode):
        if not force:
            raise CliError(f"{path} exists; pass --force to overwrite it", USAGE)
        claim.kind = FILE
    elif stat.S_ISFIFO(st.st_mode) or stat.S_ISSOCK(st.st_mode):
        claim.kind = PIPE
    else:  # a character or block device: /dev/null, /dev/full, a terminal
        claim.kind = DEVICE
    return claim


def _refuse_numbered(claim: Claim, numbered: Callable[[str], bool]) -> None:
    try:
        taken = sorted(e.name for e in os.scandir(claim.path) if numbered(e.name))
    except OSError as exc:
        raise CliError(f"cannot read {claim.path}: {exc.strerror or exc}", FAILURE) from exc
    if taken:
        raise CliError(f"{claim.path} already holds {taken[0]}{' …' if len(taken) > 1 else ''}; "
                       "pass --force to overwrite", USAGE)


def _check_parent(path: Path, is_dir: bool, out_dirs: list[str]) -> None:
    """A new file needs a directory to go in: one that exists, or the out-dir this run makes first.

    An out-dir may have missing parents: the run makes them."""
    if is_dir:
        for parent in path.parents:
            if parent.exists():
                if not parent.is_dir():
                    raise CliError(f"cannot create {path}: {parent} is not a directory", FAILURE)
                return
        return
    parent = path.parent
    if not parent.exists():
        if os.path.abspath(parent) in out_dirs:
            return
        raise CliError(f"cannot write {path}: No such file or directory", FAILURE)
    if not parent.is_dir():
        raise CliError(f"cannot write {path}: Not a directory", FAILURE)


def _refuse_shared(claims: list[Claim], numbered: Callable[[str], bool], stdout_fd: int | None) -> None:
    """No two outputs are one file: same resolved path, same inode, or a trace among the out-dir's files."""
    stdout_id = _fd_identity(stdout_fd)
    for i, a in enumerate(claims):
        if a.kind not in (DEVICE,) and stdout_id is not None and a.identity == stdout_id:
            raise CliError(f"{a.flag} {a.path} is stdout, which carries this run's output; give another file", USAGE)
        for b in claims[i + 1:]:
            if _same(a, b) and DEVICE not in (a.kind, b.kind):  # /dev/null twice loses nothing
                raise CliError(f"{a.flag} {a.path} and {b.flag} {b.path} are the same file; give them apart", USAGE)
            for d, f in ((a, b), (b, a)):
                if _inside(d, f, numbered):
                    raise CliError(f"{f.flag} {f.path} is one of the numbered files {d.flag} {d.path} is given; "
                                   "give them apart", USAGE)


def _same(a: Claim, b: Claim) -> bool:
    if a.identity is not None and a.identity == b.identity:
        return True
    return os.path.realpath(a.path) == os.path.realpath(b.path)


def _inside(d: Claim, f: Claim, numbered: Callable[[str], bool]) -> bool:
    """`f` is one of the numbered files that the out-dir `d` will be given (or a link to one)."""
    if not d.is_dir:
        return False
    real_dir = os.path.realpath(d.path)
    if os.path.dirname(os.path.realpath(f.path)) == real_dir and numbered(os.path.basename(os.path.realpath(f.path))):
        return True
    if d.kind != DIR or f.identity is None:
        return False
    try:  # an existing numbered entry that is a link (or hard link) to the other output
        entries = [e for e in os.scandir(d.path) if numbered(e.name)]
        return any((st.st_dev, st.st_ino) == f.identity for st in map(_stat_or_none, entries) if st is not None)
    except OSError:
        return False


def _stat_or_none(entry: os.DirEntry) -> os.stat_result | None:
    try:
        return os.stat(entry.path)
    except OSError:
        return None


def _fd_identity(fd: int | None) -> tuple[int, int] | None:
    if fd is None:
        return None
    try:
        st = os.fstat(fd)
    except OSError:
        return None
    if stat.S_ISCHR(st.st_mode):
        return None  # a terminal or /dev/null: sharing it loses no data
    return st.st_dev, st.st_ino


def open_pipe(path: Path):
    """A FIFO or socket named as an output, opened for writing without waiting forever for a reader."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # a FIFO nobody reads: opening it would block until someone does
            raise CliError(f"cannot write {path}: a FIFO with no reader (start the reader first)", FAILURE) from exc
        raise CliError(f"cannot write {path}: {exc.strerror or exc}", FAILURE) from exc
    os.set_blocking(fd, True)
    return os.fdopen(fd, "wb")


def _quietly(fn: Callable[[], Any]) -> None:
    try:
        fn()
    except Exception:  # noqa: S110 - undoing after a failure: the first error is the one to report
        pass
