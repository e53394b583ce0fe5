"""Safe YAML loading that remembers the line of every key, so errors can point at it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .errors import SpecError, SpecIssue

MAX_FILE_BYTES = 1 << 20  # a card or program is a few KiB; refuse anything absurd before parsing
MAX_DEPTH = 32  # cards nest 4 levels; deeper input would overflow the recursive composer (RecursionError)
MAX_EVENTS = 20_000  # keys, values and brackets; the toy card has 160


@dataclass
class Located:
    """A parsed YAML document plus the 1-based line of each dotted key path."""

    value: Any
    file: str
    lines: dict[str, int] = field(default_factory=dict)
    # duplicate keys: the first is read, the others reported with the schema's issues
    issues: list[SpecIssue] = field(default_factory=list)

    def line(self, key: str) -> int | None:
        # fall back to the nearest parent that has a line
        while key:
            if key in self.lines:
                return self.lines[key]
            key = key.rpartition(".")[0]
        return self.lines.get("")


def _walk(node: yaml.Node, path: str, lines: dict[str, int], issues: list[SpecIssue], file: str) -> None:
    """Record each key's line; flag duplicate and non-string keys (the safe loader hides both) and drop them."""
    lines.setdefault(path, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        kept = []
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
            kept.append((key_node, value_node))
            lines[child] = line
            _walk(value_node, child, lines, issues, file)
        node.value = kept  # the first of duplicates is read; the schema then checks the rest of the file
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _walk(item, f"{path}.{i}" if path else str(i), lines, issues, file)


def _check_tags(node: yaml.Node, path: str, file: str, issues: list[SpecIssue], paths: dict[int, str]) -> None:
    """Refuse aliases and non-standard tags; record each node's key path (for constructor errors)."""
    # Aliases would let a few lines expand into gigabytes (the "billion laughs"); cards never need them.
    if id(node) in paths:
        issues.append(SpecIssue(file, node.start_mark.line + 1, path, "YAML anchors and aliases are not allowed"))
        return
    paths[id(node)] = path
    # Only the standard tags the safe loader resolves by itself; `!!python/object` and friends are refused.
    if node.tag.startswith("tag:yaml.org,2002:python") or not node.tag.startswith("tag:yaml.org,2002:"):
        issues.append(SpecIssue(file, node.start_mark.line + 1, path, f"YAML tag {node.tag!r} is not allowed"))
        return
    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            _check_tags(k, path, file, issues, paths)
            name = k.value if isinstance(k, yaml.ScalarNode) else "?"
            _check_tags(v, f"{path}.{name}" if path else name, file, issues, paths)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _check_tags(item, f"{path}.{i}" if path else str(i), file, issues, paths)


class _ConstructError(Exception):
    """A constructor failure with the node it failed on, so the error can name its line and key."""

    def __init__(self, node: yaml.Node, exc: Exception):
        self.node, self.exc = node, exc


class _PlacedConstructor(yaml.constructor.SafeConstructor):
    """The safe constructor, but a failure names the node it failed on (`!!bool maybe`, `!!int abc`)."""

    def construct_object(self, node, deep=False):
        try:
            return super().construct_object(node, deep)
        except (_ConstructError, yaml.MarkedYAMLError):
            raise
        except Exception as exc:  # pyyaml's scalar constructors raise KeyError, ValueError, AttributeError...
            raise _ConstructError(node, exc) from None


def _check_shape(text: str, file: str) -> None:
    # the event parser is iterative, so it can measure nesting that would crash the composer, and
    # stop a 1 MiB list of 500k items early (composing one takes the pure-Python loader half a minute)
    depth = 0
    for count, event in enumerate(yaml.parse(text, Loader=yaml.SafeLoader)):
        if count > MAX_EVENTS:
            raise SpecError([SpecIssue(file, event.start_mark.line + 1, "", f"more than {MAX_EVENTS} YAML values")])
        if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            depth += 1
            if depth > MAX_DEPTH:
                line = event.start_mark.line + 1
                raise SpecError([SpecIssue(file, line, "", f"nested more than {MAX_DEPTH} levels deep")])
        elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            depth -= 1


def parse_yaml(text: str, file: str) -> Located:
    """Parse one YAML document with the safe loader; raise SpecError on anything wrong but duplicate keys,
    which are left out and carried in `Located.issues` for the loader to report with the schema's issues."""
    try:
        _check_shape(text, file)
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        problem = exc.problem or exc.context or "invalid YAML"
        raise SpecError([SpecIssue(file, line, "", f"YAML syntax error: {problem}")]) from None
    except yaml.reader.ReaderError as exc:
        # str(exc) spans lines; keep the reason and turn the character offset into a line
        line = text[: exc.position].count("\n") + 1
        code = exc.character if isinstance(exc.character, int) else ord(exc.character)
        raise SpecError([SpecIssue(file, line, "", f"character U+{code:04X} is not allowed: {exc.reason}")]) from None
    except yaml.YAMLError as exc:
        raise SpecError([SpecIssue(file, None, "", f"YAML error: {exc}")]) from None
    if node is None:
        raise SpecError([SpecIssue(file, 1, "", "the file is empty")])
    issues: list[SpecIssue] = []
    paths: dict[int, str] = {}
    _check_tags(node, "", file, issues, paths)
    if issues:
        raise SpecError(issues)
    lines: dict[str, int] = {}
    _walk(node, "", lines, issues, file)
    if any(issue.message.startswith("keys must be plain strings") for issue in issues):
        raise SpecError(issues)  # `<<: {...}` merges keys: read without it, the mapping would only seem to lack them
    try:
        value = _PlacedConstructor().construct_document(node)
    except yaml.MarkedYAMLError as exc:
        # e.g. `!!omap 3`: point at the value, not the document, and keep the message to one line
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else node.start_mark.line + 1
        raise SpecError([SpecIssue(file, line, "", f"YAML error: {exc.problem or exc.context}")]) from None
    except _ConstructError as err:
        bad = err.node
        what = f"not a boolean: {err.exc.args[0]!r}" if isinstance(err.exc, KeyError) else str(err.exc)
        raise SpecError([SpecIssue(file, bad.start_mark.line + 1, paths.get(id(bad), ""),
                                   f"bad {bad.tag.rpartition(':')[2]} value: {what}")]) from None
    return Located(value, file, lines, issues)


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
