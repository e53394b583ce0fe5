"""Safe by construction: a card or program cannot run code, import by name, or ask for unbounded sizes (issue 6)."""

from __future__ import annotations

import ast
import dataclasses
import importlib
import tracemalloc
from pathlib import Path
from typing import get_args, get_type_hints

import pytest
import yaml

import omni_cli.backends.toy as numpy_backend
from omni_cli.backends.hf.params import PARAMS as HF_PARAMS
from omni_cli.backends.hf.params import HFParams
from omni_cli.backends.toy.params import PARAMS as NUMPY_PARAMS
from omni_cli.program import OPS, compile_program, load_card_file, load_program_file
from omni_cli.program import backends as program_backends
from omni_cli.spec import SpecError, parse_yaml
from omni_cli.spec.card import CardSpec, ComponentSpec

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "omni_cli"
CARD = (ROOT / "cards" / "qwen2_5_omni_toy.yaml").read_text()
PROGRAM = ROOT / "programs" / "speak.yaml"


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


# code execution through YAML tags
PAYLOADS = {
    "object_apply": '!!python/object/apply:os.system ["touch {marker}"]',
    "object_new": '!!python/object/new:os.system ["touch {marker}"]',
    "object": "!!python/object:os.system {{}}",
    "name": "!!python/name:os.system",
    "module": "!!python/module:os",
}


def test_the_payload_is_live_under_an_unsafe_loader(tmp_path: Path):
    # the control: pyyaml's unsafe loader does run it, so the refusals below prove something
    marker = tmp_path / "pwned"
    yaml.unsafe_load(PAYLOADS["object_apply"].format(marker=marker))
    assert marker.exists()


@pytest.mark.parametrize("tag", sorted(PAYLOADS))
def test_python_tags_are_refused_and_nothing_runs(tmp_path: Path, tag: str):
    marker = tmp_path / "pwned"
    payload = PAYLOADS[tag].format(marker=marker)
    path = write(tmp_path, "card.yaml", CARD.replace("seed: 20251", f"seed: {payload}"))
    with pytest.raises(SpecError) as info:
        load_card_file(str(path))
    issue = info.value.issues[0]
    assert (issue.line, issue.key) == (CARD[: CARD.index("seed:")].count("\n") + 1, "seed")
    assert "is not allowed" in issue.message and "python/" in issue.message
    assert not marker.exists()


@pytest.mark.parametrize("where", ["root", "key", "nested"])
def test_python_tags_are_refused_anywhere_in_the_document(tmp_path: Path, where: str):
    marker = tmp_path / "pwned"
    payload = PAYLOADS["object_apply"].format(marker=marker)
    text = {"root": payload + "\n", "key": f"? {payload}\n: 1\n", "nested": f"a: {{b: [1, {{c: {payload}}}]}}\n"}[where]
    with pytest.raises(SpecError, match="is not allowed"):
        parse_yaml(text, "doc.yaml")
    assert not marker.exists()


# yaml is only ever loaded through the safe loader
UNSAFE_YAML_NAMES = {
    "load", "load_all", "unsafe_load", "unsafe_load_all", "full_load", "full_load_all",
    "Loader", "UnsafeLoader", "FullLoader", "Constructor", "UnsafeConstructor", "FullConstructor",
    "add_constructor", "add_multi_constructor", "CLoader", "CUnsafeLoader", "CFullLoader",
}
SAFE_LOADERS = {"SafeLoader", "CSafeLoader"}


# names other libraries use too (`torch.load`, `json.load`): unsafe only on the yaml module itself
SHARED_NAMES = {"load", "load_all"}


def unsafe_yaml_uses(tree: ast.AST) -> list[str]:
    """Each use of an unsafe pyyaml entry point, or a Loader= that is not the safe loader."""
    found = []
    yaml_names = {alias.asname or alias.name for node in ast.walk(tree) if isinstance(node, ast.Import)
                  for alias in node.names if alias.name == "yaml"} | {"yaml"}
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in UNSAFE_YAML_NAMES:
            if node.attr not in SHARED_NAMES or (isinstance(node.value, ast.Name) and node.value.id in yaml_names):
                found.append(f"line {node.lineno}: .{node.attr}")
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "yaml":
            found += [f"line {node.lineno}: from {node.module} import {a.name}" for a in node.names
                      if a.name in UNSAFE_YAML_NAMES or a.name == "*"]
        elif isinstance(node, ast.Call):
            for kw in node.keywords:
                if kw.arg == "Loader":
                    name = kw.value.attr if isinstance(kw.value, ast.Attribute) else getattr(kw.value, "id", None)
                    if name not in SAFE_LOADERS:
                        found.append(f"line {node.lineno}: Loader={ast.unparse(kw.value)}")
    return found


def test_the_yaml_checker_catches_unsafe_uses():
    bad = "import yaml\nyaml.load(s, Loader=yaml.FullLoader)\nyaml.compose(s, Loader=Mine)\nfrom yaml import unsafe_load\n"
    found = unsafe_yaml_uses(ast.parse(bad))
    assert {f.split(":")[0] for f in found} == {"line 2", "line 3", "line 4"}
    assert "line 3: Loader=Mine" in found
    assert unsafe_yaml_uses(ast.parse("yaml.compose(s, Loader=yaml.SafeLoader)\nyaml.safe_load(s)\n")) == []
    # another library's load is not yaml's; yaml's under another name is
    assert unsafe_yaml_uses(ast.parse("torch.load(p, weights_only=True)\njson.load(f)\n")) == []
    assert unsafe_yaml_uses(ast.parse("import yaml as y\ny.load(s)\n")) == ["line 2: .load"]


def test_the_package_loads_yaml_only_through_the_safe_loader():
    problems = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        found = unsafe_yaml_uses(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)))
        if found:
            problems[str(path.relative_to(ROOT))] = found
    assert problems == {}
    # and the loader really is pyyaml's safe one: a python tag does not even resolve there
    assert not any("python" in str(tag) for tag in yaml.SafeLoader.yaml_constructors)


# a card or program cannot name an import path
def test_backend_is_one_of_the_known_names_and_maps_inside_the_package():
    allowed = set(get_args(get_type_hints(ComponentSpec)["backend"]))
    assert allowed == {"numpy", "hf", "piper"}
    assert set(program_backends._MODULES) == allowed == set(program_backends._PARAMS)
    assert all(m.startswith("omni_cli.backends.") for m in [*program_backends._MODULES.values(),
                                                            *program_backends._PARAMS.values()])


@pytest.mark.parametrize("backend", ["os", "subprocess", "omni_cli.backends.toy", "../../evil", "numpy.core"])
def test_a_card_naming_a_module_as_backend_is_refused(tmp_path: Path, backend: str):
    path = write(tmp_path, "card.yaml", CARD.replace("    backend: numpy\n    role: thinker",
                                                     f"    backend: {backend!r}\n    role: thinker"))
    with pytest.raises(SpecError) as info:
        load_card_file(str(path))
    assert info.value.issues[0].key == "components.thinker.backend"
    assert "expected one of 'numpy' | 'hf'" in info.value.issues[0].message


def test_loading_imports_only_modules_of_the_package(tmp_path: Path, monkeypatch):
    imported = []
    real = importlib.import_module
    monkeypatch.setattr(importlib, "import_module", lambda name, *a: imported.append(name) or real(name, *a))
    compile_program(load_card_file(str(ROOT / "cards" / "qwen2_5_omni_toy.yaml")), load_program_file(str(PROGRAM)))
    assert imported and all(name.startswith("omni_cli.") for name in imported)


def test_ops_come_from_the_registry_inside_the_package(tmp_path: Path):
    assert OPS and all(op.fn.__module__ in ("omni_cli.program.ops", "omni_cli.program.sentence_ops", "omni_cli.program.frame_ops") for op in OPS.values())
    for name in ["os.system", "builtins.print", "omni_cli.program.ops.tokenize", "__import__"]:
        text = PROGRAM.read_text().replace("op: emit_text", f"op: {name}")
        with pytest.raises(SpecError) as info:
            compile_program(load_card_file("qwen2_5_omni_toy"), load_program_file(str(write(tmp_path, "p.yaml", text))))
        assert info.value.issues[0].key == "nodes.2.op"
        assert f"unknown op {name!r}" in info.value.issues[0].message


# sizes have declared maxima, checked by the loader before anything is allocated
def numeric_fields(cls: type, seen: set | None = None):
    """(class, field) of every int or float field reachable from a card dataclass."""
    seen = seen if seen is not None else set()
    if cls in seen:
        return
    seen.add(cls)
    hints = get_type_hints(cls)
    for f in dataclasses.fields(cls):
        if not f.init:
            continue
        tp = hints[f.name]
        if tp in (int, float):
            yield cls, f
        for sub in [tp, *get_args(tp)]:
            if dataclasses.is_dataclass(sub):
                yield from numeric_fields(sub, seen)


SCHEMAS = [CardSpec, *NUMPY_PARAMS.values(), *HF_PARAMS.values(), HFParams]


@pytest.mark.parametrize("root", SCHEMAS, ids=lambda c: f"{c.__module__.split('.')[-2]}.{c.__name__}")
def test_every_number_a_card_gives_has_a_declared_maximum(root: type):
    fields = list(numeric_fields(root))
    if root is not HF_PARAMS["thinker"]:  # the hf thinker's params are its prompts: no numbers
        assert fields
    unbounded = [f"{cls.__name__}.{f.name}" for cls, f in fields if f.metadata.get("max") is None]
    assert unbounded == []


def test_the_size_limits_are_the_declared_ones():
    from omni_cli.spec.card import LimitsSpec, LoopSpec
    from omni_cli.spec.yaml_source import MAX_DEPTH, MAX_FILE_BYTES

    def limit(cls, name):
        return next(f for f in dataclasses.fields(cls) if f.name == name).metadata["max"]
    assert limit(LoopSpec, "max_tokens") == 65536
    assert limit(LimitsSpec, "memory_budget_mib") == 1 << 20
    assert limit(NUMPY_PARAMS["thinker"], "d_model") == 1024 and limit(NUMPY_PARAMS["talker"], "d_model") == 1024
    assert limit(NUMPY_PARAMS["thinker"], "max_positions") == 65536
    assert limit(NUMPY_PARAMS["talker"], "max_positions") == 262144
    assert (MAX_FILE_BYTES, MAX_DEPTH) == (1 << 20, 32)


HUGE = {
    "max_tokens": ("    max_tokens: 16384", "    max_tokens: 1000000000000", "loops.talker_decode.max_tokens"),
    "d_model": ("{d_model: 64, num_layers: 2, num_heads: 4, max_positions: 16384}",
                "{d_model: 1000000000, num_layers: 2, num_heads: 4, max_positions: 16384}", "components.thinker.params.d_model"),
    "max_positions": ("max_positions: 32768", "max_positions: 1000000000000", "components.talker.params.max_positions"),
    "num_layers": ("{hidden: 48, num_layers: 3,", "{hidden: 48, num_layers: 100000000,", "components.vocoder.params.num_layers"),
    "memory_budget": ("memory_budget_mib: 512", "memory_budget_mib: 1000000000000000", "limits.memory_budget_mib"),
}


@pytest.mark.parametrize("name", sorted(HUGE))
def test_huge_sizes_are_refused_before_anything_is_allocated(tmp_path: Path, monkeypatch, name: str):
    old, new, key = HUGE[name]
    assert old in CARD  # the shipped card still has the value this test makes huge
    path = write(tmp_path, "card.yaml", CARD.replace(old, new))

    def must_not_build(*args, **kwargs):
        raise AssertionError("the backend was asked to build components from an out-of-bounds card")
    monkeypatch.setattr(numpy_backend, "build", must_not_build)
    program = load_program_file(str(PROGRAM))
    tracemalloc.start()
    try:
        with pytest.raises(SpecError) as info:
            compile_program(load_card_file(str(path)), program)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert info.value.issues[0].key == key
    assert "must be at most" in info.value.issues[0].message
    assert peak < 8 << 20  # parsing a few KiB of YAML, not a 10**9-wide weight matrix
