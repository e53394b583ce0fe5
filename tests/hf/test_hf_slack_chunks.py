"""`pace: slack` on the tiny checkpoint: whatever sizes the machine's speed gives the chunks, the
audio stays within the stated 60 dB SNR of one whole-utterance chunk, and the tokens are the same."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
yaml = pytest.importorskip("yaml")

import hf_cards  # noqa: E402
from test_hf_token2wav import MIN_SNR_DB, snr_db  # noqa: E402

from omni_cli.api import load  # noqa: E402
from omni_cli.engine import Engine  # noqa: E402
from omni_cli.engine.pacing import Pacer  # noqa: E402
from omni_cli.spec.request import SpeakRequest  # noqa: E402

CODES = 120


def _program(directory, checkpoint, **vocoder_loop):
    directory.mkdir()
    path = hf_cards.greedy_card(directory, "slack", thinker_max=6, talker_max=CODES + 1)
    card = yaml.safe_load(path.read_text())
    card["loops"]["vocoder"].update(vocoder_loop)
    card["components"]["talker"]["params"]["min_new_tokens"] = CODES  # every request makes CODES codes
    path.write_text(yaml.safe_dump(card))
    return load(str(path), settings={"model_path": str(checkpoint)})


def _run(program, monkeypatch, step_s: float):
    """One request, on a clock that moves `step_s` each time the scheduler's pacing reads it: a fast or a slow
    machine."""
    ticks = itertools.count()
    monkeypatch.setattr(Pacer, "clock", staticmethod(lambda: next(ticks) * step_s))
    vocoder, chunks = program.roles["vocoder"], []
    run = vocoder.run
    monkeypatch.setattr(vocoder, "run", lambda kind, inputs: chunks.extend((i.start, i.end) for i in inputs)
                        or run(kind, inputs))
    result = Engine(program).submit(SpeakRequest("hello there", mode="chat", voice="Chelsie", seed=3),
                                    collect=True).result()
    return result, chunks


@pytest.mark.parametrize(("step_s", "many_chunks"), [(1e-4, False), (1.0, True)])
def test_slack_chunks_stay_within_the_stated_snr_of_the_whole_utterance(tmp_path, tiny_checkpoint, monkeypatch,
                                                                         step_s, many_chunks):
    whole = _program(tmp_path / "whole", tiny_checkpoint, chunk_codes=0)
    reference = Engine(whole).submit(SpeakRequest("hello there", mode="chat", voice="Chelsie", seed=3),
                                     collect=True).result()
    slack = _program(tmp_path / "slack", tiny_checkpoint, chunk_codes=400, first_chunk_codes=24, pace="slack")
    result, chunks = _run(slack, monkeypatch, step_s)
    assert result.tokens == reference.tokens
    sizes = [end - start for start, end in chunks]
    codes = sum(slack.roles["talker"].code_of(t) is not None for t in result.tokens["talker_decode"])
    assert chunks[0] == (0, 24) and chunks[-1][1] == codes  # every code, each once, in order
    assert all(a[1] == b[0] for a, b in zip(chunks, chunks[1:], strict=False))
    if many_chunks:  # a slow machine: never ahead of real time, so every chunk is the smallest but the last
        assert sizes[:-1] == [24] * (len(sizes) - 1) and len(sizes) >= 4
    else:  # a fast one: the rest of the utterance in one chunk once the first audio is out
        assert len(sizes) == 2
    assert not np.array_equal(result.samples, reference.samples)  # several windows really ran
    assert snr_db(reference.samples, result.samples) > MIN_SNR_DB
