"""The rollout profile on the hf backend (tiny checkpoint): no output changes, and re-scoring
reproduces every recorded log-probability within 1e-5, alone and batched."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

pytest.importorskip("torch")
pytest.importorskip("transformers")

from omni_cli.api import load  # noqa: E402
from omni_cli.engine import Engine  # noqa: E402
from omni_cli.rollout import compare, load_run, parse_prompts, rollout, score  # noqa: E402
from omni_cli.spec import SpeakRequest  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
TOLERANCE = 1e-5  # a batched forward rounds differently from one request alone (~1e-7 in the logits)


@pytest.fixture(scope="module")
def program(tiny_checkpoint, tmp_path_factory):
    """The shipped card's sampling (temperature, top-k, top-p, repetition penalty), short utterances."""
    card = yaml.safe_load((ROOT / "cards" / "qwen2_5_omni.yaml").read_text())
    card["loops"]["thinker_decode"]["max_tokens"] = 12
    card["loops"]["talker_decode"]["max_tokens"] = 30
    card["loops"]["vocoder"]["chunk_codes"] = 0  # one chunk: the vocoder is not what this tests
    card["loops"]["vocoder"].pop("first_chunk_codes", None)
    card["loops"]["vocoder"].pop("first_audio_codes", None)
    path = tmp_path_factory.mktemp("cards") / "qwen2_5_omni_short.yaml"
    path.write_text(yaml.safe_dump(card))
    return load(str(path), settings={"model_path": str(tiny_checkpoint)})


def test_hf_rollout_changes_no_token_and_no_sample(program):
    served = Engine(program).submit(SpeakRequest("hey", mode="chat", seed=4), collect=True).result()
    rolled = Engine(program).submit(SpeakRequest("hey", mode="chat", seed=4, profile="rollout"), collect=True).result()
    assert len(served.tokens["talker_decode"]) > 5 and served.samples.size > 0
    assert served.tokens == rolled.tokens and np.array_equal(served.samples, rolled.samples)
    (chunk,) = [loop.outputs["behaviour"] for name, loop in rolled.loops.items() if name == "vocoder"]
    codes = len([t for t in rolled.tokens["talker_decode"] if program.roles["talker"].code_of(t) is not None])
    # one whole-utterance chunk: every code, every sample, the noise frames of its DiT window (2 per code)
    assert chunk["start_code"].tolist() == [0] and chunk["end_code"].tolist() == [codes]
    assert chunk["num_samples"].tolist() == [served.samples.size]
    assert chunk["noise_start"].tolist() == [0] and chunk["noise_stop"].tolist() == [2 * codes]


def test_hf_recorded_logprobs_rescore_within_1e5_alone_and_batched(program, tmp_path):
    prompts = parse_prompts(["ok then", '{"text": "what now?", "mode": "chat", "voice": "Ethan"}'])
    rollout(Engine(program), prompts, 2, tmp_path, seed=3, concurrency=4)
    samples = load_run(tmp_path)
    talker = [tuple(s.loops["talker_decode"]["token"].tolist()) for s in samples]
    assert len(set(talker)) == 4  # sampled: two seeds per prompt, two utterances
    for concurrency in (1, 4):
        for sample, rescored in zip(samples, score(Engine(program), samples, concurrency=concurrency), strict=True):
            agreement = compare(sample, rescored)
            assert agreement.num_steps > 10 and agreement.within(TOLERANCE), (concurrency, agreement)
            lp = sample.loops["talker_decode"]["logprob"]
            assert np.isfinite(lp).all() and (lp <= 0).all()
