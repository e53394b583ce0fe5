"""The two ways audio output fails: a target that cannot be written, and a reader that went away."""

from __future__ import annotations

import os


class AudioOutputError(OSError):
    """The audio target cannot be opened or written; `str()` is one line naming the target."""

    def __init__(self, target: str | os.PathLike, reason: str, errno: int | None = None) -> None:
        # a libsndfile message can span lines; the CLI prints this as one line
        reason = " ".join(str(reason).split())
        if errno is None:
            super().__init__(reason)
        else:
            super().__init__(errno, reason)
        self.target = os.fspath(target)
        self.reason = reason

    def __str__(self) -> str:
        return f"cannot write {self.target}: {self.reason}"

    @classmethod
    def from_os_error(cls, target: str | os.PathLike, error: OSError) -> AudioOutputError:
        return cls(target, error.strerror or str(error), error.errno)


class OutputClosed(Exception):
    """The reader of a pipe or stream closed it (BrokenPipeError); the CLI exits quietly."""

    def __init__(self, target: str) -> None:
        super().__init__(f"output closed: {target}")
        self.target = target
