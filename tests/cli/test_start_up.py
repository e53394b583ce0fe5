"""What `omni speak` loads before its first audio: the typer it parses with stays below the version that checks
every option through pydantic, and parsing a command imports no pydantic."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import version

import pytest
from cli_helpers import ROOT
from packaging.requirements import Requirement

tomllib = pytest.importorskip("tomllib")  # Python 3.11+

# a fresh interpreter: the test process may have imported pydantic already
PARSE = r"""
import sys
from typer.main import get_command
from omni_cli.cli.app import app
root = get_command(app)
ctx = root.make_context("omni", ["speak", "hi", "-o", "a.wav", "-q"])
speak = root.get_command(ctx, "speak").make_context("speak", ["hi", "-o", "a.wav", "-q", "-j", "3"], parent=ctx)
print(speak.params["concurrency"], speak.params["output"], "pydantic" in sys.modules)
"""


def typer_requirement() -> Requirement:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    (found,) = [Requirement(r) for r in project["dependencies"] if Requirement(r).name == "typer"]
    return found


def test_the_typer_bound_holds_for_the_installed_typer():
    wanted = typer_requirement()
    assert not wanted.specifier.contains("0.29.0")  # the first typer that imports pydantic for its options
    assert wanted.specifier.contains(version("typer"))


def test_parsing_a_command_imports_no_pydantic():
    done = subprocess.run([sys.executable, "-c", PARSE], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["3", "a.wav", "False"]
