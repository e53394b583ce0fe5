"""The layers of DESIGN.md, enforced by walking every module's imports."""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "omni_cli"
LAYERS = ["spec", "audio", "backends", "loops", "program", "engine", "build", "rollout", "bench", "serve", "cli"]  # each may import only those before it
THIRD_PARTY = {  # where each heavy or UI dependency may be imported
    "typer": {"cli"}, "rich": {"cli"}, "click": {"cli"},
    "yaml": {"spec"}, "soundfile": {"audio"}, "PIL": {"audio"},
    "torch": {"backends/hf"}, "transformers": {"backends/hf"}, "tokenizers": {"backends/hf"},
    "starlette": {"serve"}, "uvicorn": {"serve"}, "anyio": {"serve"},
    "ray": {"engine/executors/ray.py"},
    "onnx": {"backends/piper"}, "onnxruntime": {"backends/piper"}, "gruut": {"backends/piper"},
    "pocketsphinx": set(),  # the recogniser checks a voice from examples/ and tests/, never from the package
}


def modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        yield path, ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def imported(tree, path):
    """(top-level package, omni_cli layer or None) of each import in a module."""
    rel_parts = path.relative_to(PACKAGE).parts
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                yield parts[0], parts[1] if parts[0] == "omni_cli" and len(parts) > 1 else None
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against this module's package
                base = list(rel_parts[:-1])[: len(rel_parts) - node.level]
                parts = base + (node.module.split(".") if node.module else [])
                yield "omni_cli", parts[0] if parts else None
            elif node.module:
                parts = node.module.split(".")
                yield parts[0], parts[1] if parts[0] == "omni_cli" and len(parts) > 1 else None


def layer_of(path):
    rel = path.relative_to(PACKAGE)
    return rel.parts[0] if len(rel.parts) > 1 else None


def test_imports_point_down_only():
    problems = []
    for path, tree in modules():
        own = layer_of(path)
        if own not in LAYERS:
            continue
        allowed = set(LAYERS[: LAYERS.index(own) + 1])
        for top, layer in imported(tree, path):
            if top == "omni_cli" and layer in LAYERS and layer not in allowed:
                problems.append(f"{path.relative_to(PACKAGE)} imports omni_cli.{layer}")
    assert not problems, problems


def test_heavy_and_ui_dependencies_stay_in_their_layer():
    problems = []
    for path, tree in modules():
        rel = path.relative_to(PACKAGE).as_posix()
        for top, _ in imported(tree, path):
            homes = THIRD_PARTY.get(top)
            if homes is not None and not any(rel == h or rel.startswith(h + "/") for h in homes):
                problems.append(f"{rel} imports {top}")
    assert not problems, problems


def _imports_after(code):
    import subprocess
    import sys

    probe = f"import sys; {code}; print(sorted(m for m in ('torch', 'transformers', 'rich', 'typer', 'ray') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=PACKAGE.parent)
    return out.stdout.strip()


def test_the_hf_backend_imports_torch_only_when_built():
    """Its package and its params schema load without torch: cards validate without the extra."""
    assert _imports_after("import omni_cli.backends.hf, omni_cli.backends.hf.params") == "[]"


def test_the_cli_imports_no_server_until_omni_serve_runs():
    probe = ("import sys; import omni_cli.cli.app; "
             "print(sorted(m for m in ('starlette', 'uvicorn', 'omni_cli.serve') if m in sys.modules))")
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=PACKAGE.parent)
    assert out.stdout.strip() == "[]"


def test_the_default_path_imports_no_torch():
    assert _imports_after("from omni_cli.api import load; load()") == "[]"


def test_ray_is_imported_only_when_a_component_is_placed_on_it():
    """The executors, Ray's included, load without Ray: inline, thread and process runs never start it."""
    assert _imports_after("import omni_cli.engine.executors, omni_cli.engine.executors.ray") == "[]"
