"""The qwen3_omni card listens (tiny checkpoint): its audio encoder stepped one attention window at a time equals
the whole clip's rows, and the thinker's reply to heard audio equals generate's given the same audio, alone and
batched; the talker's codes and the waveform too (its user turn reads the thinker's hidden states there)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from heard_audio import RATE, clip, streamed
from hf_cards import qwen3_card

from omni_cli.api import load
from omni_cli.backends.base import AudioBlockInput
from omni_cli.backends.hf.listener import FloorState
from omni_cli.backends.hf.qwen3_reference import generate_reference
from omni_cli.engine import Engine
from omni_cli.rollout.records import behaviour
from omni_cli.spec import SpeakRequest

THINKER_MAX, TALKER_MAX = 12, 40
STREAMED_BOUND = 1e-6  # streamed Code2Wav against generate's whole decode (tests/hf/test_hf_qwen3_card.py)


@pytest.fixture(scope="module")
def chat(qwen3_checkpoint, tmp_path_factory):
    """The shipped card, greedy as generate(talker_do_sample=False) runs, through its chat program."""
    path = qwen3_card(tmp_path_factory.mktemp("qwen3_listen"), "greedy", thinker_max=THINKER_MAX,
                      talker_max=TALKER_MAX)
    return load(str(path), settings={"model_path": str(qwen3_checkpoint)}, program="chat_frames")


@pytest.fixture(scope="module")
def features(qwen3_checkpoint):
    from transformers import WhisperFeatureExtractor

    fe = WhisperFeatureExtractor.from_pretrained(str(qwen3_checkpoint))
    return lambda clip: fe(clip, sampling_rate=RATE, return_attention_mask=True, return_tensors="pt")


def prompt_ids(program, samples: np.ndarray, text: str) -> list[int]:
    prompt = program.roles["thinker"].listen_prompt(text, True)
    return prompt.before_ids + [prompt.audio_id] * program.roles["audio_encoder"].tokens_for(len(samples)) \
        + prompt.after_ids


def test_windows_encoded_alone_are_the_whole_clips_rows(chat, features):
    encoder, samples = chat.roles["audio_encoder"], clip(9.3, 1)
    feats = features(samples)
    frames = int(feats["attention_mask"].sum())
    source, state, rows, k = streamed(samples), FloorState(), [], 0
    while True:
        out = encoder.run("audio_block", [AudioBlockInput(state, source, k, k * encoder.block_samples,
                                                          (k + 1) * encoder.block_samples)])[0]
        rows.append(out.rows)
        k += 1
        if out.num_samples < encoder.block_samples:
            break
    with torch.no_grad():
        whole = encoder.tower(feats["input_features"][0, :, :frames], feature_lens=torch.tensor([frames]))
    rows = torch.cat(rows)
    assert k == 3 and encoder.block_frames == encoder.tower.config.n_window_infer  # windows of 4 s: 3 blocks
    assert rows.shape == whole.last_hidden_state.shape and rows.shape[0] == encoder.tokens_for(len(samples))
    torch.testing.assert_close(rows, whole.last_hidden_state, rtol=0, atol=1e-6)  # float rounding only


def test_thinker_tokens_equal_generate_alone_and_batched(chat, features):
    thinker = chat.roles["thinker"]
    eos = min(thinker.eos_token_ids)
    questions = [(clip(5.3, 1), "what is it?"), (clip(2.3, 2), ""), (clip(9.1, 3), "again")]
    expected = []
    for samples, text in questions:
        feats = features(samples)
        ids = prompt_ids(chat, samples, text)
        with torch.no_grad():
            seq = thinker.model.generate(torch.tensor([ids]), input_features=feats["input_features"],
                                         feature_attention_mask=feats["attention_mask"], return_audio=False,
                                         thinker_max_new_tokens=THINKER_MAX, thinker_eos_token_id=eos)
        expected.append(seq[0, len(ids):].tolist())
    assert all(expected)  # an empty reply never counts as parity
    alone = Engine(chat).submit(SpeakRequest(questions[0][1], mode="chat", audio=streamed(questions[0][0])),
                                collect=True).result()
    assert alone.error is None and alone.tokens["thinker_decode"] == expected[0]
    engine = Engine(chat, max_batch=8)
    handles = [engine.submit(SpeakRequest(t, mode="chat", seed=i, audio=streamed(s)), collect=True)
               for i, (s, t) in enumerate(questions)]
    handles.append(engine.submit(SpeakRequest("hello there", mode="chat"), collect=True))  # text only, beside them
    results = [h.result() for h in handles]
    assert all(r.error is None for r in results), [r.error for r in results]
    assert [r.tokens["thinker_decode"] for r in results[:3]] == expected


def test_the_spoken_answer_equals_generate_given_the_same_audio(chat, features):
    thinker, samples = chat.roles["thinker"], clip(5.3, 1)
    feats = features(samples)
    ref = generate_reference(thinker.model, prompt_ids(chat, samples, "hello there"), voice="Chelsie",
                             thinker_max=THINKER_MAX, talker_max=TALKER_MAX, thinker_eos=min(thinker.eos_token_ids),
                             input_features=feats["input_features"], feature_attention_mask=feats["attention_mask"])
    ours = Engine(chat).submit(SpeakRequest("hello there", mode="chat", voice="Chelsie", audio=streamed(samples),
                                            profile="rollout"), collect=True).result()
    assert ours.error is None and ref.frames and ref.talker_tokens[-1] in chat.roles["talker"].eos_token_ids
    assert ours.tokens["thinker_decode"] == ref.thinker_tokens
    assert ours.tokens["talker_decode"] == ref.talker_tokens
    assert ours.samples.shape == ref.samples.shape
    assert float(np.max(np.abs(ours.samples - ref.samples))) <= STREAMED_BOUND
    # other audio, other scores: the heard rows reach the thinker and, through its hidden states, the talker
    other = Engine(chat).submit(SpeakRequest("hello there", mode="chat", voice="Chelsie", audio=streamed(clip(5.3, 2)),
                                             profile="rollout"), collect=True).result()
    for loop in ("thinker_decode", "talker_decode"):
        first = [behaviour(r)[loop]["logprob_model"][0] for r in (ours, other)]
        assert first[0] != first[1], loop
