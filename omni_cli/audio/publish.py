"""Output files that appear under their name already holding a valid header."""

from __future__ import annotations

import errno
import os
import secrets
import stat
from collections.abc import Callable

_BINARY = getattr(os, "O_BINARY", 0)
_CREATE_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _BINARY
_OPEN_AS_IS = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | _BINARY
# a temporary name beside the target cannot be made, but the target itself can be rewritten
_NO_TEMPORARY = (errno.EACCES, errno.EPERM, errno.EROFS, errno.ENAMETOOLONG)


def open_published(path: str | os.PathLike, prepare: Callable[[int], None]) -> int:
    """A descriptor open for writing on `path`, on which `prepare(fd)` (the header) has already run.

    A regular file, or a name not yet taken, is made under a hidden temporary name in the same
    directory, prepared, and only then renamed onto `path` (through a symlink to its target). So a
    process killed at any moment, SIGKILL included, leaves under `path` either what was there before
    or a file that starts with its whole header, never an empty one; an existing file given with
    `--force` is untouched until its replacement is ready (it keeps its permission bits). A kill in
    the microseconds between making and renaming can leave the hidden `.NAME.PID-XXXXXXXX.partial`.
    Anything that is not a regular file (a device such as /dev/null or /dev/full, a FIFO, a
    directory) is opened as it is, and so is an existing file in a directory we cannot write.
    The OSError raised is the one opening `path` itself would raise (missing directory, no permission).
    """
    target = os.path.realpath(os.fspath(path))
    try:
        existing = os.stat(target)
    except OSError:
        existing = None
    if existing is not None and not stat.S_ISREG(existing.st_mode):
        return _open_as_is(path, prepare)
    directory, name = os.path.split(target)
    temporary = os.path.join(directory, f".{name}.{os.getpid()}-{secrets.token_hex(4)}.partial")
    try:
        fd = os.open(temporary, _CREATE_NEW, 0o666)
    except OSError as e:
        if e.errno in _NO_TEMPORARY and (existing is not None or e.errno == errno.ENAMETOOLONG):
            return _open_as_is(path, prepare)
        raise
    try:
        if existing is not None:
            os.fchmod(fd, stat.S_IMODE(existing.st_mode))
        prepare(fd)
        os.replace(temporary, target)
    except BaseException:
        os.close(fd)
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise
    return fd


def _open_as_is(path: str | os.PathLike, prepare: Callable[[int], None]) -> int:
    fd = os.open(path, _OPEN_AS_IS, 0o666)
    try:
        prepare(fd)
    except BaseException:
        os.close(fd)
        raise
    return fd
