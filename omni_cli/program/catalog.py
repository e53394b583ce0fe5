"""Find cards and programs by name (shipped with the package) or by path, and load them checked."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..spec import (
    CardSpec,
    ProgramSpec,
    SpecError,
    SpecIssue,
    check_card,
    check_program_spec,
    load_card,
    load_program,
    read_yaml,
)
from ..spec.card import PROGRAM_NAME
from ..spec.overrides import apply_overrides, attributed
from .checks import check_against_card, check_card_parts

_PACKAGE = Path(__file__).resolve().parent.parent


def data_dirs(kind: str) -> list[Path]:
    """Where `kind` ("cards" or "programs") files live: inside an installed wheel, or a source checkout."""
    candidates = [_PACKAGE / "_data" / kind, _PACKAGE.parent / kind]
    return [d for d in candidates if d.is_dir()]


def _stem_key(name: str) -> str:
    return name.replace("-", "_").replace(".", "_").lower()


def list_files(kind: str) -> list[Path]:
    seen: dict[str, Path] = {}
    for d in data_dirs(kind):
        for path in sorted(d.glob("*.yaml")):
            seen.setdefault(path.stem, path)
    return list(seen.values())


def resolve(kind: str, name_or_path: str) -> Path:
    """A file path as given, else a shipped file whose stem or declared name matches."""
    looks_like_path = "/" in name_or_path or name_or_path.endswith((".yaml", ".yml"))
    if looks_like_path:
        path = Path(name_or_path)
        if not path.is_file():
            raise SpecError([SpecIssue(name_or_path, None, "", f"no such {kind[:-1]} file")])
        return path
    wanted = _stem_key(name_or_path)
    for path in list_files(kind):
        if _stem_key(path.stem) == wanted:
            return path
    known = ", ".join(p.stem for p in list_files(kind)) or "none"
    raise SpecError([SpecIssue(name_or_path, None, "", f"unknown {kind[:-1]} (known: {known})")])


def load_card_file(name_or_path: str, overrides: Mapping[str, Any] | None = None) -> CardSpec:
    """A valid card (`overrides` as in `load_checked`), or SpecError with every issue."""
    located = read_yaml(resolve("cards", name_or_path))
    try:
        return load_card(apply_overrides(located, (overrides or {}).items()))
    except SpecError as exc:
        raise SpecError(attributed(exc.issues, located.file, overrides or {}, located.lines)) from None


def load_program_file(name_or_path: str) -> ProgramSpec:
    return load_program(read_yaml(resolve("programs", name_or_path)))


def card_for(program: str, preferred: str = "qwen2_5_omni_toy") -> str:
    """A shipped card with every capability `program` requires (`preferred` when it has them, or when no card
    has): what `omni programs validate` checks a program against when no card is named."""
    try:
        needs = set(load_program_file(program).requires)
    except SpecError:  # load_checked reports it, with every other issue of the file
        return preferred
    names = sorted((p.stem for p in list_files("cards")), key=lambda name: name != preferred)
    for name in names:
        try:
            if needs <= set(load_card_file(name).capabilities):
                return name
        except SpecError:
            continue
    return preferred


def load_checked(card: str, program: str | None = None,
                 overrides: Mapping[str, Any] | None = None) -> tuple[CardSpec, ProgramSpec]:
    """A card and a program (names or paths; the program defaults to the card's) with every check that needs
    no weights; SpecError with every issue of both in one pass — what `omni cards validate` prints,
    and what `omni speak` shows the first of. An unreadable file stops only the checks of that file.

    `overrides`: card values by dotted key (`--set`, `omni_cli/spec/overrides.py`), set before the checks."""
    located = read_yaml(resolve("cards", card))
    card_spec, card_issues = check_card(apply_overrides(located, (overrides or {}).items()))
    issues = card_issues.issues
    if card_spec is not None:
        check_card_parts(card_spec, card_issues)
    program_spec = None
    if program is None and card_spec is not None and not card_spec.was_dropped("defaults.program") \
            and PROGRAM_NAME.fullmatch(card_spec.defaults.program):  # else the card's issue says why
        program = card_spec.defaults.program
        try:
            resolve("programs", program)
        except SpecError:  # a shipped name that is not shipped: the card's mistake, at its line
            known = ", ".join(p.stem for p in list_files("programs")) or "none"
            issues.append(SpecIssue(card_spec.source, card_spec.line("defaults.program"), "defaults.program",
                                    f"unknown program {program!r} (shipped: {known})"))
            program = None
    if program is not None:
        try:
            program_spec, program_issues = check_program_spec(read_yaml(resolve("programs", program)))
        except SpecError as exc:
            issues = issues + exc.issues
        else:
            if program_spec is not None and card_spec is not None:
                check_against_card(program_spec, card_spec, program_issues, structure_valid=not program_issues.issues)
            issues = issues + program_issues.issues
    if issues:
        raise SpecError(attributed(issues, located.file, overrides or {}, located.lines))
    return card_spec, program_spec
