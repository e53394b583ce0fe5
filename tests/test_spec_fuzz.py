"""Mutated cards and programs either load and compile or raise SpecError — nothing else escapes (issue 6)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from omni_cli.program import compile_program, load_card_file, load_checked, load_program_file
from omni_cli.spec import SpecError

ROOT = Path(__file__).resolve().parent.parent
GOOD = {"card": ROOT / "cards" / "qwen2_5_omni_toy.yaml", "program": ROOT / "programs" / "speak.yaml"}
TEXT = {kind: path.read_text(encoding="utf-8") for kind, path in GOOD.items()}
DATA = {kind: yaml.safe_load(text) for kind, text in TEXT.items()}

# fixed and bounded, so the suite stays a few seconds and fails the same way on every machine
settings.register_profile("spec_fuzz", max_examples=200, derandomize=True, deadline=None, database=None,
                          suppress_health_check=[HealthCheck.too_slow])
FUZZ = settings.get_profile("spec_fuzz")

# out of every declared bound, or cheap when inside one (never a max bound: d_model 1024 x 16 layers is ~1 GB)
EXTREME_NUMBERS = [0, 1, -1, 2, -(2**31), 10**12, 10**9, 2**63, 10**100, 1e308, -1e308, 0.5, float("nan"), float("inf")]
OTHER_VALUES = [None, True, False, "", " ", "x" * 300, "..", "os.system", "numpy", "thinker", "vocoder",
                "ar_decode", "audio_decode", "stream", "text", [], [1, 2], [None], {}, {"a": 1}, {"id": "x"}]


def paths(value: Any, prefix: tuple = ()) -> list[tuple]:
    """Every key path inside a parsed document, the root included."""
    out = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            out += paths(v, prefix + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += paths(v, prefix + (i,))
    return out


def get(doc: Any, path: tuple) -> Any:
    for k in path:
        doc = doc[k]
    return doc


def strings(value: Any) -> list[str]:
    return [get(value, p) for p in paths(value) if isinstance(get(value, p), str)]


@st.composite
def mutated(draw, kind: str) -> Any:
    """The good document with 1-3 edits: delete, add an unknown key, retype, extreme number, swap strings."""
    doc = copy.deepcopy(DATA[kind])
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(paths(doc)))
        action = draw(st.sampled_from(["delete", "add_key", "retype", "extreme", "swap"]))
        parent = get(doc, path[:-1]) if path else None
        if action == "delete" and path:
            del parent[path[-1]]
        elif action == "add_key":
            target = get(doc, path)
            if isinstance(target, dict):
                target[draw(st.sampled_from(["colour", "import", "__class__", "loops", "id", "x.y"]))] = 1
        else:
            if action == "retype":
                new = copy.deepcopy(draw(st.sampled_from(OTHER_VALUES)))  # a later edit must not change the pool
            elif action == "extreme":
                new = draw(st.sampled_from(EXTREME_NUMBERS))
            else:
                new = draw(st.sampled_from(strings(doc) or ["x"]))
            if path:
                parent[path[-1]] = new
            else:
                doc = new
    return doc


@st.composite
def corrupted(draw, kind: str) -> bytes:
    """The good file's bytes, truncated, with bytes flipped, junk inserted, or lines dropped or doubled."""
    data = bytearray(TEXT[kind].encode("utf-8"))
    action = draw(st.sampled_from(["truncate", "flip", "insert", "drop_line", "double_line"]))
    if action == "truncate":
        return bytes(data[: draw(st.integers(0, len(data)))])
    if action == "flip":
        for _ in range(draw(st.integers(1, 4))):
            i = draw(st.integers(0, len(data) - 1))
            data[i] ^= draw(st.integers(1, 255))
        return bytes(data)
    if action == "insert":
        i = draw(st.integers(0, len(data)))
        junk = draw(st.sampled_from([b"\x00", b"\xff", b"\t", b":", b"- ", b"{", b"]", b"&a ", b"*a", b"!!python/name:os.system ",
                                     b"\n  ", b'"', b"\xe2\x80\xa8", b"\x1b[2J"]))
        return bytes(data[:i] + junk + data[i:])
    lines = bytes(data).splitlines(keepends=True)
    i = draw(st.integers(0, len(lines) - 1))
    return b"".join(lines[:i] + ([] if action == "drop_line" else [lines[i], lines[i]]) + lines[i + 1:])


@pytest.fixture(scope="module")
def fuzz_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("spec_fuzz")


@pytest.fixture(scope="module")
def good():
    return {"card": load_card_file(str(GOOD["card"])), "program": load_program_file(str(GOOD["program"]))}


def check(kind: str, data: bytes, fuzz_dir: Path, good: dict) -> None:
    """Load and compile `data` as a `kind` file paired with the other good file: success or SpecError only.

    The one-pass check (`load_checked`, what `omni cards validate` and `omni speak` run) must agree: it refuses
    what loading stage by stage refuses, with at least the same issues, and accepts what compiles (issue 18).
    """
    path = fuzz_dir / f"{kind}.yaml"
    path.write_bytes(data)
    pair = (str(path), str(GOOD["program"])) if kind == "card" else (str(GOOD["card"]), str(path))
    try:
        load_checked(*pair)
        in_one_pass = None
    except SpecError as exc:
        in_one_pass = exc
        assert_well_placed(exc, kind, path, data)
    try:
        if kind == "card":
            compile_program(load_card_file(str(path)), good["program"])
        else:
            compile_program(good["card"], load_program_file(str(path)))
        event("accepted")
        assert in_one_pass is None, f"compiles, but the one-pass check refused it: {in_one_pass}"
    except SpecError as exc:
        event("refused")  # --hypothesis-show-statistics: how many mutants were refused vs accepted
        assert_well_placed(exc, kind, path, data)
        if in_one_pass is not None:  # else only building the components refused it: no check without weights can
            missed = set(exc.issues) - set(in_one_pass.issues)
            assert not missed, f"stage by stage found {missed}, not in one pass: {in_one_pass.issues}"


def assert_well_placed(exc: SpecError, kind: str, path: Path, data: bytes) -> None:
    assert exc.issues
    # a card change can break the program against it (a renamed prompt slot): then the program is named
    files = {str(path), str(GOOD["program" if kind == "card" else "card"])}
    for issue in exc.issues:
        assert issue.file in files, issue
        if issue.file == str(path):
            assert issue.line is None or 1 <= issue.line <= data.count(b"\n") + 1, issue
        assert "\n" not in str(issue) and "\r" not in str(issue)
    assert "\n" not in str(exc) and "\r" not in str(exc)


@pytest.mark.parametrize("kind", ["card", "program"])
def test_good_file_round_trips_through_the_mutator(kind, fuzz_dir, good):
    # yaml.safe_dump of the untouched document must still compile, or the mutations would prove nothing
    path = fuzz_dir / f"{kind}.yaml"
    path.write_text(yaml.safe_dump(DATA[kind]))
    if kind == "card":
        compile_program(load_card_file(str(path)), good["program"])
    else:
        compile_program(good["card"], load_program_file(str(path)))


@FUZZ
@given(kind=st.sampled_from(["card", "program"]), data=st.data())
def test_mutated_documents_load_or_raise_spec_error(kind, data, fuzz_dir, good):
    doc = data.draw(mutated(kind))
    check(kind, yaml.safe_dump(doc, allow_unicode=True).encode("utf-8"), fuzz_dir, good)


@FUZZ
@given(kind=st.sampled_from(["card", "program"]), data=st.data())
def test_corrupted_bytes_load_or_raise_spec_error(kind, data, fuzz_dir, good):
    check(kind, data.draw(corrupted(kind)), fuzz_dir, good)
