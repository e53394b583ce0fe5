"""omni_cli's cache of what it builds once per machine, trusted only where it can prove it made a file.

Two rules, as ssh has for `~/.ssh`:

- **A folder nobody else can write.** The cache's folders must be owned by this user and writable by nobody
  else, and so must every folder omni creates them in, unless it is a sticky folder such as /tmp (others
  there cannot rename or remove what is ours). A loose one is refused (`CacheRefused`), never repaired.
- **A file whose digest omni recorded.** Each artifact is written under a temporary name, flushed to disk and
  renamed; then its SHA-256 is written beside it the same way (`NAME.sha256`). A file without its digest, or
  whose bytes no longer match it (cut short by a crash, copied in part, edited), is not loaded: callers
  rebuild it or go without.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

CACHE_ENV = "OMNI_CLI_CACHE"
DIGEST_SUFFIX = ".sha256"


class CacheRefused(Exception):
    """The cache cannot be trusted or used; the message is one line naming the path and why."""


def cache_root() -> Path:
    """$OMNI_CLI_CACHE, else $XDG_CACHE_HOME/omni_cli, else ~/.cache/omni_cli (not created here)."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV]).expanduser().absolute()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser().absolute() / "omni_cli"


def cache_dir(*parts: str, root: Path | None = None) -> Path:
    """The folder `root/parts...` (root: `cache_root()`), created with mode 0700 where missing, after checking
    that it and every folder it is created in can be written by this user alone (`CacheRefused` if not)."""
    root = (root or cache_root()).absolute()
    folder = root.joinpath(*parts)
    missing = []
    existing = folder
    while not existing.exists() and existing.parent != existing:
        missing.append(existing)
        existing = existing.parent
    own = [root.joinpath(*parts[:depth]) for depth in range(len(parts) + 1)]
    for path in own:  # nothing is made inside a cache folder that is already loose
        if path.exists():
            _check_own(path)
    if missing:
        _check_parent(existing)
    for path in reversed(missing):
        try:
            path.mkdir(mode=0o700)
        except FileExistsError:
            pass
        except OSError as error:
            raise CacheRefused(f"cannot create cache folder {path}: {error.strerror or error}") from None
    for path in own:
        _check_own(path)
    return folder


def _check_parent(path: Path) -> None:
    """A folder omni creates in: ours or root's, and not writable by others unless sticky."""
    info = _stat(path)
    if info.st_uid not in (os.getuid(), 0):
        raise CacheRefused(f"cache folder {path} is owned by another user (uid {info.st_uid}); refusing to use it")
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not info.st_mode & stat.S_ISVTX:
        raise CacheRefused(f"cache folder {path} is writable by other users; refusing to use it "
                           f"(chmod go-w {path}, or set {CACHE_ENV} to a private folder)")


def _check_own(path: Path) -> None:
    """A folder of the cache itself: a real folder, ours, writable by nobody else."""
    info = _stat(path)
    if not stat.S_ISDIR(info.st_mode):
        raise CacheRefused(f"cache path {path} is not a folder; refusing to use it")
    if info.st_uid != os.getuid():
        raise CacheRefused(f"cache folder {path} is owned by another user (uid {info.st_uid}); refusing to use it")
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise CacheRefused(f"cache folder {path} is writable by other users; refusing to use it "
                           f"(chmod go-w {path}, or set {CACHE_ENV} to a private folder)")


def _stat(path: Path) -> os.stat_result:
    try:
        return path.stat()
    except OSError as error:
        raise CacheRefused(f"cannot read cache folder {path}: {error.strerror or error}") from None


def digest_path(path: Path) -> Path:
    return path.with_name(path.name + DIGEST_SUFFIX)


def _digest_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _write_whole(path: Path, data: bytes, mode: int = 0o600) -> None:
    """`data` at `path`: a temporary file in the same folder, flushed to disk, then renamed over it."""
    import tempfile  # only writers pay for it: `omni --help` reads the cache

    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".partial-")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def write_artifact(path: Path, data: bytes, mode: int = 0o600) -> None:
    """Keep `data` at `path` and its digest beside it, each written whole (a crash leaves no digest that
    matches a partial file)."""
    digest_path(path).unlink(missing_ok=True)
    _write_whole(path, data, mode)
    _write_whole(digest_path(path), _digest_of(data).encode())


def record(path: Path) -> None:
    """Record the digest of a file omni has just made at `path` by other means (a compiler's output, renamed
    into place whole)."""
    _write_whole(digest_path(path), _digest_of(path.read_bytes()).encode())


def read_verified(path: Path) -> bytes | None:
    """The bytes at `path` if omni recorded them (the digest beside it matches), else None: missing, cut
    short, edited, or placed there by something else. The bytes returned are the ones checked."""
    try:
        expected = digest_path(path).read_text().strip()
        data = path.read_bytes()
    except (OSError, UnicodeDecodeError):
        return None
    return data if _digest_of(data) == expected else None


def read_owned(path: Path) -> tuple[bytes | None, str | None]:
    """(`read_verified(path)`, None) for a file that is ours and writable by nobody else; else (None, why): a file
    another user owns or others may write is refused before its bytes are read, whatever its digest says. A
    missing file is (None, None)."""
    try:
        info = path.lstat()
    except FileNotFoundError:
        return None, None
    except OSError as error:
        return None, f"cannot read it: {error.strerror or error}"
    if not stat.S_ISREG(info.st_mode):
        return None, "it is not a plain file"
    if info.st_uid != os.getuid():
        return None, f"it is owned by another user (uid {info.st_uid})"
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return None, "it is writable by other users"
    data = read_verified(path)
    if data is None:
        have = digest_path(path).exists()
        return None, "its bytes do not match the digest omni recorded (cut short or edited)" if have else \
            "it has no digest beside it (omni did not write it)"
    return data, None


def verified(path: Path) -> bool:
    """Whether the file at `path` is one omni recorded (see `read_verified`)."""
    return read_verified(path) is not None


def discard(path: Path) -> None:
    """Remove an artifact and its digest (one that failed its check, before it is rebuilt)."""
    path.unlink(missing_ok=True)
    digest_path(path).unlink(missing_ok=True)


def remembered_digest(folder: Path, key: str, compute) -> str:
    """A SHA-256 hex digest that is slow to compute (a large file's, a model's weights'), kept in `folder` under
    `key` (what changes when the thing does: its path, size and modification time) and computed again only
    when nothing verified is kept there."""
    path = folder / hashlib.sha256(key.encode()).hexdigest()[:32]
    known = read_verified(path)
    if known is not None and len(known) == 64:
        return known.decode()
    digest = compute()
    try:
        write_artifact(path, digest.encode())
    except OSError:
        pass  # computed again next time
    return digest
