"""The missing-extra hint is a command that works: from the checkout, with the CPU torch pin (issue 18)."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

import pytest
from cli_helpers import ROOT

from omni_cli import extras


def test_the_distribution_is_omni_stepwise_and_the_command_still_omni():
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["name"] == extras.DISTRIBUTION == "omni-stepwise"
    assert project["scripts"] == {"omni": "omni_cli.cli.entry:main"}
    assert set(project["optional-dependencies"]) >= {"hf", "serve", "ray"}


def test_from_the_checkout_the_hint_installs_this_tree_with_the_cpu_torch_pin():
    assert extras.checkout_root() == ROOT
    assert extras.install_command("hf") == f'pip install torch==2.13.0 -e "{ROOT}[hf]"'
    assert extras.install_command("serve") == f'pip install -e "{ROOT}[serve]"'


def test_outside_a_checkout_the_hint_names_the_distribution(tmp_path):
    # an installed wheel: the module's parent holds no pyproject.toml of ours
    package = tmp_path / "site" / "omni_cli"
    package.mkdir(parents=True)
    shutil.copy(Path(extras.__file__), package / "extras.py")
    spec = importlib.util.spec_from_file_location("installed_extras", package / "extras.py")
    installed = importlib.util.module_from_spec(spec)
    sys.modules.pop("installed_extras", None)
    spec.loader.exec_module(installed)
    assert installed.checkout_root() is None
    assert installed.install_command("hf") == 'pip install torch==2.13.0 "omni-stepwise[hf]"'


def test_the_cli_says_the_command_when_an_extra_is_missing():
    from omni_cli.cli.errors import classify

    code, message = classify(ImportError("No module named 'torch'"))
    assert code == 1 and message.endswith(f'pip install torch==2.13.0 -e "{ROOT}[hf]")')
