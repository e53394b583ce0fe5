"""The voice's sessions made on their own thread (ahead.py): the build uses the ones begun for its thread count,
makes its own for another, and a failure on that thread is the build's one error."""

from __future__ import annotations

import pytest

from omni_cli.api import load
from omni_cli.backends.base import BackendUnavailable
from omni_cli.backends.piper import ahead, graph_cache


def sessions(program):
    return program.roles["acoustic"]._session, program.roles["vocoder"]._session


def test_sessions_begun_ahead_are_the_ones_the_build_uses():
    begun = ahead.start(0)
    assert ahead.start(0) is begun  # begun once
    made = begun.result()
    assert sessions(load("piper_joe")) == (made.acoustic, made.decoder)
    assert sessions(load("piper_joe")) != (made.acoustic, made.decoder)  # taken once: the next build makes its own


def test_sessions_begun_for_another_thread_count_are_let_go():
    begun = ahead.start(0)
    program = load("piper_joe", settings={"num_threads": 1})
    acoustic, decoder = sessions(program)
    assert begun.result().acoustic is not acoustic
    assert acoustic.get_session_options().intra_op_num_threads == 1
    assert decoder.get_session_options().intra_op_num_threads == 1
    assert ahead._pending == {}


def test_a_failure_on_the_sessions_thread_is_the_builds_one_error(monkeypatch):
    def no_onnx(path):
        raise ModuleNotFoundError("No module named 'onnx'", name="onnx")

    monkeypatch.setattr(graph_cache, "split_graphs", no_onnx)
    with pytest.raises(BackendUnavailable, match="needs onnx"):
        load("piper_joe")
