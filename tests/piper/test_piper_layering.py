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
