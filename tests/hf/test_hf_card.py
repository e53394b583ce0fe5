"""The shipped qwen2_5_omni card on the tiny checkpoint: engine and `omni speak` equal generate."""

from __future__ import annotations

import os
import subprocess
import sys
import wave
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("yaml")

import hf_cards  # noqa: E402
from test_hf_parity import hf_generate  # noqa: E402

from omni_cli.api import load  # noqa: E402
from omni_cli.audio.pcm import float_to_pcm16  # noqa: E402
from omni_cli.backends.hf.tiny import PROMPT  # noqa: E402
from omni_cli.engine import Engine  # noqa: E402
from omni_cli.spec.request import SpeakRequest  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
THINKER_MAX, TALKER_MAX = 12, 80


@pytest.fixture(scope="module")
def greedy_card(tmp_path_factory) -> Path:
    return hf_cards.greedy_card(tmp_path_factory.mktemp("cards"), "qwen2_5_omni_greedy", thinker_max=THINKER_MAX,
                                talker_max=TALKER_MAX)


@pytest.fixture(scope="module")
def program(greedy_card, tiny_checkpoint):
    return load(str(greedy_card), settings={"model_path": str(tiny_checkpoint)})


@pytest.fixture(scope="module")
def reference_run(program, tiny_checkpoint):
    from transformers import Qwen2_5OmniForConditionalGeneration

    model = Qwen2_5OmniForConditionalGeneration.from_pretrained(str(tiny_checkpoint)).eval()
    parts = program.components
    prompt = parts["thinker"].encode(PROMPT, "chat").prefill_ids
    # the vocoder's noise is drawn from the request's seed (SpeakRequest's default, 0)
    return hf_generate(model, parts, prompt, voice="Chelsie", seed=0, thinker_max=THINKER_MAX, talker_max=TALKER_MAX)


def test_engine_run_of_the_card_equals_generate(program, reference_run):
    ref_thinker, ref_talker, ref_wave = reference_run
    result = Engine(program).submit(SpeakRequest(PROMPT, mode="chat", voice="Chelsie"), collect=True).result()
    thinker, talker = result.tokens["thinker_decode"], result.tokens["talker_decode"]
    # a real utterance: the thinker stopped at its EOS, the talker at codec EOS, audio for every code
    assert len(thinker) > 3 and thinker[-1] in program.components["thinker"].eos_token_ids
    assert 30 < len(talker) < TALKER_MAX and talker[-1] in program.components["talker"].eos_token_ids
    assert len(set(talker)) > 10
    assert result.tokens["thinker_decode"] == ref_thinker
    assert result.tokens["talker_decode"] == ref_talker
    assert result.samples.size == 480 * (len(ref_talker) - 1) > 0
    assert torch.equal(torch.from_numpy(result.samples), ref_wave)


def test_engine_interleaves_requests_as_if_alone(program):
    requests = [
        SpeakRequest(PROMPT, mode="chat", voice="Chelsie", request_id="a"),
        SpeakRequest("ok then", mode="echo", voice="Ethan", request_id="b"),
    ]
    alone = [Engine(program).submit(r, collect=True).result() for r in requests]
    engine = Engine(program)
    batched = set()
    engine.subscribe(lambda e: batched.add(e.loop) if getattr(e, "kind", None) == "ar_token" and e.batch_size > 1
                     else None)
    handles = [engine.submit(r, collect=True) for r in requests]
    for _ in engine.events():
        pass
    assert batched == {"thinker_decode", "talker_decode"}  # decode steps really shared forwards
    together = [h.result() for h in handles]
    for a, t in zip(alone, together, strict=True):
        # batched decode rounds differently (tests/hf/test_hf_batching.py), not enough to change a
        # greedy token; the whole-utterance vocoder windows differ in length and run alone
        assert a.tokens == t.tokens and a.samples.size > 0
        assert np.array_equal(a.samples, t.samples)


def test_omni_speak_writes_generate_s_waveform(greedy_card, tiny_checkpoint, reference_run, tmp_path):
    out = tmp_path / "out.wav"
    cmd = [
        sys.executable,
        "-m",
        "omni_cli.cli",
        "speak",
        "--card",
        str(greedy_card),
        "--model-path",
        str(tiny_checkpoint),
        "--mode",
        "chat",
        "--voice",
        "Chelsie",
        "-q",
        "-o",
        str(out),
        PROMPT,
    ]
    # one intra-op thread, as in this process (conftest): the thread count changes float rounding
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=300, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    with wave.open(str(out)) as wav:
        assert (wav.getframerate(), wav.getnchannels(), wav.getsampwidth()) == (24000, 1, 2)
        written = np.frombuffer(wav.readframes(wav.getnframes()), dtype="<i2")
    assert np.array_equal(written, float_to_pcm16(reference_run[2].numpy()))


def test_batched_token2wav_windows_equal_alone_within_the_cards_tolerance(tiny_checkpoint):
    from omni_cli.bench import greedy_variant

    # every request makes 60 codes, so their DiT windows have one length and run as one batch
    program = greedy_variant(load("qwen2_5_omni", settings={"model_path": str(tiny_checkpoint)},
                                  overrides={"loops.vocoder.pace": "schedule"}), {"thinker": 8, "talker": 61},
                             talker_min=60)
    requests = [SpeakRequest(f"hello {i}", mode="chat", voice="Chelsie", seed=i, request_id=f"q{i}") for i in range(3)]
    alone = [Engine(program).submit(r, collect=True).result() for r in requests]
    engine = Engine(program)
    batches = []
    engine.subscribe(lambda e: batches.append(e.batch_size) if getattr(e, "kind", None) == "audio_chunk" else None)
    handles = [engine.submit(r, collect=True) for r in requests]
    for _ in engine.events():
        pass
    assert max(batches) == 3  # the windows really were batched
    tolerance = program.card.batching.sample_tolerance
    for a, t in zip(alone, [h.result() for h in handles], strict=True):
        assert a.tokens == t.tokens and a.samples.size == t.samples.size > 0
        assert float(np.max(np.abs(a.samples - t.samples))) <= tolerance
