"""The tiny random Qwen2.5-Omni checkpoint the hf tests run on, built once per session."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

# two cores shared with other test processes: OpenMP threads spin-wait and stall for seconds under
# contention, one thread does not (both sides of every parity check run in this process alike)
torch.set_num_threads(1)


@dataclass(frozen=True)
class TinyBuild:
    path: Path
    stdout: str
    stderr: str  # what the builder wrote to stderr: nothing (issue 18: it printed ten config warnings)


def shared_build(tmp_path_factory: pytest.TempPathFactory, name: str, builder: str) -> TinyBuild:
    """`python -m BUILDER DIR` run once per test run: the first worker to ask builds it while the other waits on a
    lock, then both read the one checkpoint (no test writes into it) and the build's own stdout and stderr."""
    base = tmp_path_factory.getbasetemp()
    root = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base  # the run's folder, above the workers'
    directory, record = root / name, root / f"{name}.json"
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not record.exists():
            env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
            done = subprocess.run([sys.executable, "-m", builder, str(directory)], env=env, capture_output=True,
                                  text=True, timeout=600)
            assert done.returncode == 0, done.stderr
            record.write_text(json.dumps({"stdout": done.stdout, "stderr": done.stderr}))
    said = json.loads(record.read_text())
    return TinyBuild(directory, said["stdout"], said["stderr"])


@pytest.fixture(scope="session")
def tiny_build(tmp_path_factory: pytest.TempPathFactory) -> TinyBuild:
    """The checkpoint as a user builds it (`python -m omni_cli.backends.hf.tiny DIR`), in a fresh process:
    transformers warns once per process, so only a fresh one shows every warning the build causes."""
    return shared_build(tmp_path_factory, "qwen2_5_omni_tiny", "omni_cli.backends.hf.tiny")


@pytest.fixture(scope="session")
def tiny_checkpoint(tiny_build: TinyBuild) -> Path:
    return tiny_build.path


@pytest.fixture(scope="session")
def realwidth_checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The Qwen2.5-Omni-3B shape (every width as released, 2 layers per stack), sharded bf16: about 1 min
    and 5 GB to build, 1.9 GB on disk. The 7B shape is built by `python -m omni_cli.backends.hf.realwidth
    7b DIR` (about 1.5 min, 3.6 GB on disk); test_hf_realwidth_7b.py builds its own in a child process."""
    from omni_cli.backends.hf.realwidth import build_real_width_checkpoint

    return build_real_width_checkpoint(tmp_path_factory.mktemp("qwen2_5_omni_3b_width"), "3b")


@pytest.fixture(scope="session")
def qwen3_build(tmp_path_factory: pytest.TempPathFactory) -> TinyBuild:
    """The tiny Qwen3-Omni checkpoint (`python -m omni_cli.backends.hf.qwen3_tiny DIR`), built once, in a fresh
    process as a user builds it."""
    return shared_build(tmp_path_factory, "qwen3_omni_tiny", "omni_cli.backends.hf.qwen3_tiny")


@pytest.fixture(scope="session")
def qwen3_checkpoint(qwen3_build: TinyBuild) -> Path:
    return qwen3_build.path
