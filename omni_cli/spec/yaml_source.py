"""Safe YAML loading that remembers the line of every key, so errors can point at it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .errors import SpecError, SpecIssue

MAX_FILE_BYTES = 1 << 20  # a card or program is a few KiB; refuse anything absurd before parsing


@dataclass
class Located:
    """A parsed YAML document plus the 1-based line of each dotted key path."""

    value: Any
    file: str
    lines: dict[str, int] = field(default_factory=dict)

    def line(self, key: str) -> int | None:
        # fall back to the nearest parent that has a line
        while key:
            if key in self.lines:
                return self.lines[key]
            key = key.rpartition(".")[0]
        return self.lines.get("")


def _walk(node: yaml.Node, path: str, lines: dict[str, int], issues: list[SpecIssue], file: str) -> None:
    """Record each key's line; flag duplicate and non-string keys (the safe loader hides both)."""
    lines.setdefault(path, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key_node, value_node in node.value:
            line = key_node.start_mark.line + 1
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag != "tag:yaml.org,2002:str":
                issues.append(SpecIssue(file, line, path, f"keys must be plain strings, got {getattr(key_node, 'value', '?')!r}"))
                continue
            child = f"{path}.{key_node.value}" if path else key_node.value
            if key_node.value in seen:
                issues.append(SpecIssue(file, line, child, "duplicate key"))
                continue
            seen.add(key_node.value)
            lines[child] = line
            _walk(value_node, child, lines, issues, file)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _walk(item, f"{path}.{i}" if path else str(i), lines, issues, file)


def _check_tags(node: yaml.Node, file: str, issues: list[SpecIssue], seen: set[int]) -> None:
    # Aliases would let a few lines expand into gigabytes (the "billion laughs"); cards never need them.
    if id(node) in seen:
        issues.append(SpecIssue(file, node.start_mark.line + 1, "", "YAML anchors and aliases are not allowed"))
        return
    seen.add(id(node))
    # Only the standard tags the safe loader resolves by itself; `!!python/object` and friends are refused.
    if node.tag.startswith("tag:yaml.org,2002:python") or not node.tag.startswith("tag:yaml.org,2002:"):
        issues.append(SpecIssue(file, node.start_mark.line + 1, "", f"YAML tag {node.tag!r} is not allowed"))
        return
    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            _check_tags(k, file, issues, seen)
            _check_tags(v, file, issues, seen)
    elif isinstance(node, yaml.SequenceNode):
        for item in node.value:
            _check_tags(item, file, issues, seen)


def parse_yaml(text: str, file: str) -> Located:
    """Parse one YAML document with the safe loader; raise SpecError on anything wrong."""
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        problem = exc.problem or exc.context or "invalid YAML"
        raise SpecError([SpecIssue(file, line, "", f"YAML syntax error: {problem}")]) from None
    except yaml.YAMLError as exc:
        raise SpecError([SpecIssue(file, None, "", f"YAML error: {exc}")]) from None
    if node is None:
        raise SpecError([SpecIssue(file, 1, "", "the file is empty")])
    issues: list[SpecIssue] = []
    _check_tags(node, file, issues, set())
    if issues:
        raise SpecError(issues)
    lines: dict[str, int] = {}
    _walk(node, "", lines, issues, file)
    if issues:
        raise SpecError(issues)
    try:
        value = yaml.constructor.SafeConstructor().construct_document(node)
    except (yaml.YAMLError, ValueError, OverflowError, TypeError) as exc:
        raise SpecError([SpecIssue(file, node.start_mark.line + 1, "", f"YAML error: {exc}")]) from None
    return Located(value, file, lines)


def read_yaml(path: Path) -> Located:
    """Read and parse a YAML file; unreadable, huge or non-UTF-8 files are SpecErrors."""
    file = str(path)
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise SpecError([SpecIssue(file, None, "", f"file is {size} bytes, over the {MAX_FILE_BYTES}-byte limit")])
        raw = path.read_bytes()
    except OSError as exc:
        raise SpecError([SpecIssue(file, None, "", f"cannot read: {exc.strerror or exc}")]) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise SpecError([SpecIssue(file, line, "", "file is not valid UTF-8 text")]) from None
    if "\x00" in text:
        raise SpecError([SpecIssue(file, text[: text.index("\x00")].count("\n") + 1, "", "file contains NUL bytes")])
    return parse_yaml(text, file)
