"""The voice's dependencies load only when its card is built."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("onnx", "onnxruntime", "gruut")


def imports_after(code: str) -> str:
    probe = f"import sys; {code}; print(sorted(m for m in {HEAVY!r} if m in sys.modules))"
    return subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT).stdout.strip()


def test_the_backend_package_and_its_params_import_nothing_heavy():
    assert imports_after("import omni_cli.backends.piper, omni_cli.backends.piper.params, omni_cli.program") == "[]"


def test_validating_the_voice_card_imports_nothing_heavy():
    code = ("from omni_cli.program import check_program, load_card_file, load_program_file; "
            "c = load_card_file('piper_joe'); check_program(c, load_program_file(c.defaults.program))")
    assert imports_after(code) == "[]"


def test_the_package_never_imports_piper_tts():
    """piper-tts (GPL) is a benchmark's comparison only: examples/bench_piper.py runs it in its own interpreter."""
    import ast

    for path in (ROOT / "omni_cli").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
            assert not any(n == "piper" or n.startswith("piper.") for n in names), path


def test_the_piper_benchmark_without_piper_says_so_in_one_line():
    done = subprocess.run([sys.executable, str(ROOT / "examples" / "bench_piper.py"), "--piper", "/nonexistent/piper"],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode != 0 and done.stderr.count("\n") == 1 and "install piper-tts" in done.stderr
