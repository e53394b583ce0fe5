"""CLI test helpers: an in-process runner with stdout and stderr apart, real subprocesses, reference audio."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from cli_helpers import proc_env

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

@pytest.fixture()
def home(tmp_path, monkeypatch):
    """A hermetic home and working directory."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture()
def omni(home):
    """`omni(*args, input=None)` in-process through typer's CliRunner; result.stdout / result.stderr apart."""
    from typer.testing import CliRunner

    from omni_cli.cli.app import app

    runner = CliRunner()

    def invoke(*args, input=None):
        return runner.invoke(app, [str(a) for a in args], input=input, catch_exceptions=False)

    return invoke


@pytest.fixture()
def spawn(home):
    """`spawn(*args, **popen_kwargs)`: a real `python -m omni_cli.cli` process in the hermetic home."""
    started: list[subprocess.Popen] = []

    def start(*args, **kwargs):
        kwargs.setdefault("stdout", subprocess.PIPE)
        kwargs.setdefault("stderr", subprocess.PIPE)
        p = subprocess.Popen([sys.executable, "-m", "omni_cli.cli", *map(str, args)], cwd=home,
                             env=proc_env(home / "home"), **kwargs)
        started.append(p)
        return p

    yield start
    for p in started:
        if p.poll() is None:
            p.kill()
        p.wait()


@pytest.fixture(scope="session")
def program():
    from omni_cli.api import load

    return load("qwen2_5_omni_toy")


@pytest.fixture(scope="session")
def solo(program):
    """`solo(text, **request)` -> int16 samples of that text spoken alone, as a WAV would hold them."""
    from omni_cli.audio import float_to_pcm16
    from omni_cli.engine import Engine
    from omni_cli.spec import SpeakRequest

    cache: dict = {}

    def run(text: str, **request) -> np.ndarray:
        key = (text, tuple(sorted(request.items())))
        if key not in cache:
            result = Engine(program).submit(SpeakRequest(text, **request), collect=True).result()
            cache[key] = float_to_pcm16(result.samples)
        return cache[key]

    return run
