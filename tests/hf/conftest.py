"""The tiny random Qwen2.5-Omni checkpoint the hf tests run on, built once per session."""

from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from omni_cli.backends.hf.tiny import build_tiny_checkpoint  # noqa: E402

# two cores shared with other test processes: OpenMP threads spin-wait and stall for seconds under
# contention, one thread does not (both sides of every parity check run in this process alike)
torch.set_num_threads(1)


@pytest.fixture(scope="session")
def tiny_checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_checkpoint(tmp_path_factory.mktemp("qwen2_5_omni_tiny"))


@pytest.fixture(scope="session")
def realwidth_checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The Qwen2.5-Omni-3B shape (every width as released, 2 layers per stack), sharded bf16: about 1 min
    and 5 GB to build, 1.9 GB on disk. The 7B shape is built by `python -m omni_cli.backends.hf.realwidth
    7b DIR` (about 2 min, 3.5 GB on disk), not in the suite."""
    from omni_cli.backends.hf.realwidth import build_real_width_checkpoint

    return build_real_width_checkpoint(tmp_path_factory.mktemp("qwen2_5_omni_3b_width"), "3b")
