"""The library's front page: the README's snippet runs as written; a placed, replicated voice is one engine's."""

from __future__ import annotations

import wave
from pathlib import Path

import numpy as np
import pytest
from test_placement_runs import deadline

import omni_cli
from omni_cli.engine.replicas import ReplicaPool
from omni_cli.spec import SpecError


def readme_snippet() -> str:
    """The README's library section ("From Python"), read from README.md itself so the two cannot drift."""
    text = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    section = text[text.index("## From Python"):]
    return section[section.index("```python\n") + len("```python\n"):section.index("\n```", section.index("```python"))]


README_SNIPPET = readme_snippet()

LINES = ["Hello, world.", "A somewhat longer sentence, to make the lengths ragged."]


def test_the_readme_snippet_runs(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    exec(compile(README_SNIPPET, "README.md", "exec"), {})
    lines = capsys.readouterr().out.splitlines()
    with wave.open(str(tmp_path / "hello.wav")) as wav:
        rate, frames = wav.getframerate(), wav.getnframes()
    assert lines[0] == f"{frames / rate:.2f} s at {rate} Hz" and frames > rate // 2  # over half a second of speech
    chunks = [tuple(map(int, line.split())) for line in lines[1:]]
    assert chunks and [index for index, _ in chunks] == list(range(len(chunks)))
    assert all(num_samples > 0 for _, num_samples in chunks)


def _inline() -> list:
    with omni_cli.load_voice("qwen2_5_omni_toy") as voice:
        return [voice.speak(text, seed=i) for i, text in enumerate(LINES)]


@pytest.mark.parametrize("placement", ["thinker=process", "ray"])
def test_a_placed_replicated_voice_speaks_as_one_inline_engine(request, placement):
    if placement == "ray":
        request.getfixturevalue("ray_cluster")
    expected = _inline()
    with deadline(180), omni_cli.load_voice("qwen2_5_omni_toy", placement=placement, replicas=2) as voice:
        assert isinstance(voice.engine, ReplicaPool) and len(voice.engine.replicas) == 2
        for i, text in enumerate(LINES):
            speech = voice.speak(text, seed=i)
            assert speech.num_samples > 0 and speech.text == expected[i].text
            assert np.array_equal(speech.samples, expected[i].samples)
        for _ in voice.stream(LINES[1], seed=1):  # stopped early: cancelled, and the next one is whole
            break
        streamed = np.concatenate([c.samples for c in voice.stream(LINES[0], seed=0)])
        assert np.array_equal(streamed, expected[0].samples)


def test_an_inline_voice_streams_what_it_speaks_and_refuses_bad_input():
    with omni_cli.load_voice("qwen2_5_omni_toy") as voice:
        whole = voice.speak(LINES[0], seed=3)
        chunks = list(voice.stream(LINES[0], seed=3))
        assert [c.index for c in chunks] == list(range(len(chunks))) and len(chunks) > 1
        assert np.array_equal(np.concatenate([c.samples for c in chunks]), whole.samples)
        with pytest.raises(SpecError, match="seed"):
            voice.speak("Hi.", seed=-1)
        with pytest.raises(SpecError, match="voice"):
            voice.speak("Hi.", voice="nobody")
    with pytest.raises(SpecError, match="placement"):
        omni_cli.load_voice("qwen2_5_omni_toy", placement="nowhere")
