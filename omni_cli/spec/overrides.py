"""`--set KEY=VALUE`: a card's value changed for one command, the card's file left as it is.

KEY is a dotted path as `omni cards show NAME --params` lists it (`components.vocoder.params.dit_compile`,
`loops.vocoder.chunk_codes`, `limits.max_text_chars`); VALUE is read as YAML (`true`, `96`, `0.5`, `Ethan`,
`{executor: process, workers: 2}`). The values go into the parsed card before it is checked, so a value set
here meets every check a value written in the file meets, and an issue with it names `--set` instead of a
line of the file.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable

from .errors import SpecError, SpecIssue
from .yaml_source import Located, parse_yaml

SOURCE = "--set"
_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")


def parse_override(text: str) -> tuple[str, object]:
    """`KEY=VALUE` as (key, value read as YAML); SpecError naming `--set` for anything else."""
    key, sep, raw = text.partition("=")
    key = key.strip()
    if not sep or not _KEY.fullmatch(key):
        raise SpecError([SpecIssue(SOURCE, None, "", f"expected KEY=VALUE with a dotted KEY as `omni cards show "
                                                     f"NAME --params` lists it, got {text!r}")])
    if not raw.strip():
        return key, ""
    try:  # the card loader's own parser: no aliases or python tags, bounded nesting and size
        value = parse_yaml(raw, SOURCE).value
    except SpecError as exc:
        problem = exc.issues[0].message.removeprefix("YAML syntax error: ")
        raise SpecError([SpecIssue(SOURCE, None, key, f"{raw!r} is not a YAML value: {problem}")]) from None
    return key, value


def apply_overrides(src: Located, overrides: Iterable[tuple[str, object]]) -> Located:
    """A copy of the parsed card with each key set (its mappings made where the card has none). A key
    through a value that is not a mapping is refused: the card says something else is there."""
    overrides = list(overrides)
    if not overrides:
        return src
    value = copy.deepcopy(src.value)
    issues: list[SpecIssue] = []
    for key, new in overrides:
        if not isinstance(value, dict):
            break  # not a card at all: the card's own check says so
        *parents, last = key.split(".")
        node = value
        for depth, part in enumerate(parents):
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                where = ".".join(parents[:depth + 1])
                issues.append(SpecIssue(SOURCE, None, key, f"{where} is a {type(child).__name__} in the card, "
                                                           "not a mapping of keys"))
                break
            node = child
        else:
            node[last] = new
    if issues:
        raise SpecError(issues)
    return Located(value, src.file, dict(src.lines), list(src.issues))


def attributed(issues: list[SpecIssue], file: str, keys: Iterable[str],
               in_file: Iterable[str] | None = None) -> list[SpecIssue]:
    """The card's issues with those about a key set from the command line (or a part of it) named as
    `--set`'s: the line the file has for that key is not where the value came from. `in_file`: the dotted keys
    the file has (`Located.lines`); with it, an issue about a mapping `--set` made (a typo in a parent key:
    `loop.x=1`, `loops.vocodr.chunk_codes=4`) or about a key inside one is `--set`'s too."""
    keys = tuple(keys)
    present = None if in_file is None else set(in_file)

    def made_by_set(key: str, given_key: str) -> bool:
        shared = []
        for a, b in zip(key.split("."), given_key.split("."), strict=False):
            if a != b:
                break
            shared.append(a)
        return bool(shared) and ".".join(shared) not in present

    def given(key: str) -> bool:
        return any(key == k or key.startswith(k + ".") or (present is not None and made_by_set(key, k)) for k in keys)

    return [SpecIssue(SOURCE, None, i.key, i.message) if i.file == file and i.key and given(i.key) else i
            for i in issues]
