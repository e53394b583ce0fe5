"""Strict conversion of parsed YAML into dataclasses: unknown, missing and mistyped keys are errors."""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from collections.abc import Callable
from typing import Any, Literal, TypeVar, get_args, get_origin, get_type_hints

from .errors import IssueList
from .yaml_source import Located

T = TypeVar("T")
_MISSING = object()


def bounded(default: Any = dataclasses.MISSING, *, min: float | None = None, max: float | None = None, doc: str = "") -> Any:
    """A dataclass field with declared bounds, checked before anything is built or allocated."""
    meta = {"min": min, "max": max, "doc": doc}
    if default is dataclasses.MISSING:
        return dataclasses.field(metadata=meta)
    if isinstance(default, (list, dict)):
        return dataclasses.field(default_factory=lambda d=default: type(d)(d), metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


class ParamsSchema:
    """Base of a backend's component params dataclasses: `problems()` gives the rules between fields
    as (field, message) pairs, checked after each field is (e.g. heads dividing the width); none by default."""

    def problems(self) -> list[tuple[str, str]]:
        return []


@dataclasses.dataclass(frozen=True)
class FieldDoc:
    """One key a schema accepts, as `omni cards show --params` lists it."""

    name: str
    default: Any  # MISSING when the key is required
    accepts: str  # its bounds ("0 to 4096") or the values its type takes
    doc: str


def field_docs(cls: type) -> list[FieldDoc]:
    """Each field of a schema dataclass: its default, what it accepts (bounds, else its type) and its doc."""
    hints = get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        if not f.init:
            continue
        if f.default is not dataclasses.MISSING:
            default = f.default
        elif f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        else:
            default = dataclasses.MISSING
        lo, hi = f.metadata.get("min"), f.metadata.get("max")
        if lo is not None or hi is not None:
            accepts = f"{_num(lo)} to {_num(hi)}" if lo is not None and hi is not None else (
                f"at least {_num(lo)}" if lo is not None else f"at most {_num(hi)}")
            if any(get_origin(option) is list for option in get_args(hints[f.name])):  # a number or a list of them
                accepts += ", or a list of such"
        else:
            accepts = _type_name(hints[f.name])
        out.append(FieldDoc(f.name, default, accepts, f.metadata.get("doc", "")))
    return out


def _num(x: float | None) -> str:
    return f"{x:,}" if isinstance(x, int) else f"{x:,g}"


def _type_name(tp: Any) -> str:
    if get_origin(tp) is Literal:
        return " | ".join(repr(a) for a in get_args(tp))
    if get_origin(tp) in (typing.Union, types.UnionType):
        return " or ".join(_type_name(a) for a in get_args(tp))
    if dataclasses.is_dataclass(tp):
        return "mapping"
    origin = get_origin(tp)
    if origin is list:
        return f"list of {_type_name(get_args(tp)[0])}"
    if origin is dict:
        return f"mapping of {_type_name(get_args(tp)[1])}"
    names = {int: "integer", float: "number", str: "string", bool: "true/false", type(None): "null", Any: "any value"}
    return names.get(tp, str(tp))


def _got(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true/false"
    return {int: "integer", float: "number", str: "string", list: "list", dict: "mapping"}.get(type(value), type(value).__name__)


def _convert(tp: Any, value: Any, key: str, src: Located, issues: IssueList, meta: dict) -> Any:
    out = _convert_value(tp, value, key, src, issues, meta)
    if out is _MISSING:
        issues.dropped.add(key)
    return out


def _convert_value(tp: Any, value: Any, key: str, src: Located, issues: IssueList, meta: dict) -> Any:
    line = src.line(key)
    origin = get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        return _union(tp, value, key, src, issues, meta)
    if origin is Literal:
        if value not in get_args(tp) or isinstance(value, bool):
            issues.add(line, key, f"expected one of {_type_name(tp)}, got {value!r}")
            return _MISSING
        return value
    if dataclasses.is_dataclass(tp):
        return _dataclass(tp, value, key, src, issues)
    if origin is list:
        if not isinstance(value, list):
            issues.add(line, key, f"expected {_type_name(tp)}, got {_got(value)}")
            return _MISSING
        (item_tp,) = get_args(tp)
        items = [_convert(item_tp, v, f"{key}.{i}", src, issues, meta) for i, v in enumerate(value)]
        return [v for v in items if v is not _MISSING]
    if origin is dict:
        if not isinstance(value, dict):
            issues.add(line, key, f"expected {_type_name(tp)}, got {_got(value)}")
            return _MISSING
        _, value_tp = get_args(tp)
        out = {k: _convert(value_tp, v, f"{key}.{k}", src, issues, meta) for k, v in value.items()}
        return {k: v for k, v in out.items() if v is not _MISSING}
    if tp is Any:
        return value
    return _scalar(tp, value, key, line, issues, meta)


def _union(tp: Any, value: Any, key: str, src: Located, issues: IssueList, meta: dict) -> Any:
    """The first option of `tp` the value converts to; else the issues of the option of the value's own shape."""
    options = get_args(tp)
    if value is None and type(None) in options:
        return None
    shaped = None  # the issues of the one option of the value's own shape (a list for a list), if one
    for option in options:
        if option is type(None):
            continue
        trial = IssueList(issues.file)
        out = _convert(option, value, key, src, trial, meta)
        if not trial.issues:
            return out
        if get_origin(option) in (list, dict) and isinstance(value, get_origin(option)):
            shaped = trial
    if shaped is not None:  # say which item is wrong, not only that the whole is
        issues.extend(shaped.issues)
    else:
        issues.add(src.line(key), key, f"expected {_type_name(tp)}, got {_got(value)}")
    return _MISSING


def _scalar(tp: Any, value: Any, key: str, line: int | None, issues: IssueList, meta: dict) -> Any:
    """A bool, int, float or str: its type, a finite number, non-empty valid text, the field's bounds."""
    if tp is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if not isinstance(value, tp) or (tp is int and isinstance(value, bool)):
        issues.add(line, key, f"expected {_type_name(tp)}, got {_got(value)}")
        return _MISSING
    if tp is float and not math.isfinite(value):
        issues.add(line, key, f"expected a finite number, got {value!r}")
        return _MISSING
    if tp is str and not value.strip():
        issues.add(line, key, "must not be empty")
        return _MISSING
    if tp is str and any("\ud800" <= ch <= "\udfff" for ch in value):
        # a "\ud800" escape decodes to a lone surrogate, which no UTF-8 terminal or file can print
        issues.add(line, key, "contains a lone surrogate (not valid Unicode text)")
        return _MISSING
    if tp in (int, float):
        lo, hi = meta.get("min"), meta.get("max")
        if lo is not None and value < lo:
            issues.add(line, key, f"must be at least {lo}, got {value}")
            return _MISSING
        if hi is not None and value > hi:
            issues.add(line, key, f"must be at most {hi}, got {value}")
            return _MISSING
    return value


_RETIRED: dict[type, dict[str, str]] = {}  # by dataclass: a key it no longer takes, and what to write instead


def retired(**messages: str) -> Callable[[type[T]], type[T]]:
    """Class decorator: keys a dataclass once took, each refused with its message instead of "unknown key"."""
    def declare(cls: type[T]) -> type[T]:
        _RETIRED[cls] = messages
        return cls
    return declare


def _dataclass(cls: type[T], value: Any, key: str, src: Located, issues: IssueList, *, whole: bool = False) -> Any:
    """`cls` from a mapping, or _MISSING when a field is missing or wrong (an unknown key is reported, not fatal).

    `whole`: the document itself, which is kept even then — broken fields take their default (or an empty
    value) so the rules between its parts still run and every independent mistake is reported in one pass.
    """
    if not isinstance(value, dict):
        issues.add(src.line(key), key, f"expected a mapping, got {_got(value)}")
        return _MISSING
    hints = get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    kwargs: dict[str, Any] = {}
    failed = False
    for name in value:
        if name not in fields:
            child = f"{key}.{name}" if key else name
            if name in _RETIRED.get(cls, {}):
                issues.add(src.line(child), child, _RETIRED[cls][name])
                continue
            known = f"expected one of: {', '.join(sorted(fields))}" if fields else "none are allowed here"
            issues.add(src.line(child), child, f"unknown key ({known})")
    for name, f in fields.items():
        child = f"{key}.{name}" if key else name
        if name not in value:
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                issues.add(src.line(key), child, "missing required key")
                failed = True
            continue
        out = _convert(hints[name], value[name], child, src, issues, dict(f.metadata))
        if out is _MISSING:
            failed = True
        else:
            kwargs[name] = out
    if failed and not whole:
        return _MISSING
    for name, f in fields.items():
        if name not in kwargs and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            empty = {str: "", list: [], dict: {}}.get(get_origin(hints[name]) or hints[name], _MISSING)
            if empty is _MISSING:
                return _MISSING
            kwargs[name] = empty
            issues.dropped.add(f"{key}.{name}" if key else name)
    return cls(**kwargs)


def check_dataclass(cls: type[T], src: Located, issues: IssueList) -> T | None:
    """As much of the document `src` as is valid (see `_dataclass`), every issue added to `issues`."""
    out = _dataclass(cls, src.value, "", src, issues, whole=True)
    return None if out is _MISSING else out


def load_dataclass(cls: type[T], src: Located, *, key: str = "", value: Any = _MISSING) -> T:
    """Build `cls` from `src` (or from `value`, a part of it at `key`); raise SpecError with every issue."""
    issues = IssueList(src.file)
    out = _dataclass(cls, src.value if value is _MISSING else value, key, src, issues)
    issues.raise_if_any()
    return out
