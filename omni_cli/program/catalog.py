"""Find cards and programs by name (shipped with the package) or by path."""

from __future__ import annotations

from pathlib import Path

from ..spec import CardSpec, ProgramSpec, SpecError, SpecIssue, load_card, load_program, read_yaml

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


def load_card_file(name_or_path: str) -> CardSpec:
    return load_card(read_yaml(resolve("cards", name_or_path)))


def load_program_file(name_or_path: str) -> ProgramSpec:
    return load_program(read_yaml(resolve("programs", name_or_path)))
