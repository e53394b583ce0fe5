"""The one error type for invalid cards, programs and requests: every issue, with file and line."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SpecIssue:
    file: str  # path or "<request>"
    line: int | None  # 1-based; None when the issue has no place in a file
    key: str  # dotted path to the offending key, "" for the whole document
    message: str

    def __str__(self) -> str:
        where = self.file if self.line is None else f"{self.file}:{self.line}"
        key = f" {self.key}:" if self.key else ""
        return _printable(f"{where}:{key} {self.message}")


def _printable(text: str) -> str:
    # keys and paths come from the user's file: a key like "a\nb" must not break the one-line error
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in text)


class SpecError(ValueError):
    """A card, program or request is invalid. Carries every issue found, not just the first."""

    def __init__(self, issues: list[SpecIssue]):
        if not issues:
            raise ValueError("SpecError needs at least one issue")
        self.issues = in_file_order(issues)
        super().__init__(self.one_line())

    def one_line(self) -> str:
        more = len(self.issues) - 1
        suffix = f" (and {more} more error{'s' if more > 1 else ''})" if more else ""
        return f"{self.issues[0]}{suffix}"

    def __str__(self) -> str:
        return self.one_line()


def in_file_order(issues: list[SpecIssue]) -> list[SpecIssue]:
    """Files in the order they were first named; in each, issues with no line first, then by line.

    The first issue is what `omni speak` shows on its one line, and what `omni cards validate` prints first.
    """
    files = {issue.file: i for i, issue in reversed(list(enumerate(issues)))}
    return sorted(issues, key=lambda issue: (files[issue.file], issue.line or 0))


def any_dropped(dropped: set[str] | frozenset[str], keys: tuple[str, ...]) -> bool:
    """Whether the value at one of `keys`, a part of it or what holds it is among the `dropped` keys: left out
    of a document for an issue already reported. A rule that reads it stays quiet — what it would say follows
    from that issue (one mistake, one error)."""
    return any(gone == key or key.startswith(gone + ".") or gone.startswith(key + ".") for gone in dropped for key in keys)


class IssueList:
    """Collects issues while validating, then raises them all at once."""

    def __init__(self, file: str):
        self.file = file
        self.issues: list[SpecIssue] = []
        self.dropped: set[str] = set()  # keys whose written value was left out (or replaced) for an issue

    def add(self, line: int | None, key: str, message: str) -> None:
        self.issues.append(SpecIssue(self.file, line, key, message))

    def extend(self, issues: list[SpecIssue]) -> None:
        self.issues.extend(issues)

    def was_dropped(self, *keys: str) -> bool:
        return any_dropped(self.dropped, keys)

    def raise_if_any(self) -> None:
        if self.issues:
            raise SpecError(self.issues)
