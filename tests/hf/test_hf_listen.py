"""The hf card listens: Whisper's log-mel frames made as the audio arrives, the audio tower stepped per n_window
block, and the thinker's reply equal to generate's given the same audio, alone and batched with other requests."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
import torch
from heard_audio import RATE, clip, streamed
from hf_cards import greedy_card

from omni_cli.api import load
from omni_cli.backends.base import AudioBlockInput
from omni_cli.backends.hf.listener import FLOOR_LOG10, FloorState
from omni_cli.engine import Engine
from omni_cli.spec import SpeakRequest, SpecError


@pytest.fixture(scope="module")
def chat(tiny_checkpoint, tmp_path_factory):
    card = greedy_card(tmp_path_factory.mktemp("listen"), "greedy_listen", thinker_max=12, talker_max=24)
    return load(str(card), "chat", settings={"model_path": str(tiny_checkpoint)})


@pytest.fixture(scope="module")
def features(tiny_checkpoint):
    from transformers import WhisperFeatureExtractor

    fe = WhisperFeatureExtractor.from_pretrained(str(tiny_checkpoint))
    return lambda clip: fe(clip, sampling_rate=RATE, return_attention_mask=True, return_tensors="pt")


def blocks(encoder, source) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """Every block's rows as the loop runs them, and each block's log-mel frames."""
    state, rows, mels, k = FloorState(), [], [], 0
    real_log_mel = encoder.log_mel

    def keep(*args):
        mels.append(real_log_mel(*args))
        return mels[-1]

    encoder.log_mel = keep
    try:
        while True:
            out = encoder.run("audio_block", [AudioBlockInput(state, source, k, k * encoder.block_samples,
                                                              (k + 1) * encoder.block_samples)])[0]
            rows.append(out.rows)
            k += 1
            if out.num_samples < encoder.block_samples:
                return torch.cat(rows), mels
    finally:
        del encoder.log_mel


def reference_rows(chat, feats) -> torch.Tensor:
    with torch.no_grad():
        return chat.roles["thinker"].module.get_audio_features(
            feats["input_features"], feature_attention_mask=feats["attention_mask"]).last_hidden_state


def test_log_mel_is_whispers_and_blocks_are_the_whole_clips(chat, features):
    encoder, samples = chat.roles["audio_encoder"], clip(4.57, 1)
    feats = features(samples)
    frames = int(feats["attention_mask"].sum())
    assert frames == encoder.frames_for(len(samples))
    whole_mel = encoder.log_mel(samples, 0, frames, FloorState())
    assert torch.equal(whole_mel, feats["input_features"][0, :, :frames])  # the same arithmetic as Whisper's
    rows, mels = blocks(encoder, streamed(samples))
    reference = reference_rows(chat, feats)
    assert len(mels) == 3 and rows.shape == reference.shape and rows.shape[0] == encoder.tokens_for(len(samples))
    torch.testing.assert_close(rows, reference, rtol=0, atol=1e-6)  # per-block shapes: float rounding only


def generate_tokens(chat, samples: np.ndarray, text: str, features, max_new: int = 12) -> list[int]:
    thinker = chat.roles["thinker"]
    feats = features(samples)
    prompt = thinker.listen_prompt(text, True)
    n = chat.roles["audio_encoder"].tokens_for(len(samples))
    ids = prompt.before_ids + [prompt.audio_id] * n + prompt.after_ids
    with torch.no_grad():
        seq = thinker.module.generate(torch.tensor([ids]), input_features=feats["input_features"],
                                      feature_attention_mask=feats["attention_mask"], max_new_tokens=max_new,
                                      do_sample=False)
    return seq[0, len(ids):].tolist()


def test_thinker_tokens_equal_generate_alone_and_batched(chat, features):
    questions = [(clip(4.57, 1), "what is it?"), (clip(2.3, 2), ""), (clip(6.1, 3, silent_s=0.4), "again")]
    expected = [generate_tokens(chat, s, t, features) for s, t in questions]
    assert all(expected)  # an empty reply never counts as parity
    alone = Engine(chat).submit(SpeakRequest(questions[0][1], mode="chat", audio=streamed(questions[0][0])),
                                collect=True).result()
    assert alone.error is None and alone.tokens["thinker_decode"] == expected[0]
    engine = Engine(chat, max_batch=8)
    handles = [engine.submit(SpeakRequest(t, mode="chat", seed=i, audio=streamed(s)), collect=True)
               for i, (s, t) in enumerate(questions)]
    handles.append(engine.submit(SpeakRequest("hello there", mode="chat"), collect=True))  # text only, beside them
    for _ in engine.events():
        pass
    results = [h.result() for h in handles]
    assert all(r.error is None for r in results)
    assert [r.tokens["thinker_decode"] for r in results[:3]] == expected
    assert results[3].tokens["thinker_decode"] and results[0].samples.size > 0


def test_the_streaming_floor_bound_on_leading_silence(chat, features):
    """Whisper floors at the clip's maximum - 80 dB; a stream floors at the maximum so far. With a second of
    digital silence first, block 0 floors lower: each value differs by at most (clip max - running max) / 4
    (log10 units, Whisper's scale), only where the whole clip clamped it, and the reply is unchanged."""
    encoder, samples = chat.roles["audio_encoder"], clip(5.2, 4, silent_s=1.0)
    feats = features(samples)
    frames = int(feats["attention_mask"].sum())
    whole = feats["input_features"][0, :, :frames]
    _, mels = blocks(encoder, streamed(samples))
    stream = torch.cat(mels, dim=1)
    clip_max = float(whole.max()) * 4 - 4  # back to log10 units
    state = FloorState()
    for k, mel in enumerate(mels):
        part = whole[:, k * encoder.block_frames:k * encoder.block_frames + mel.shape[1]]
        running = max(state.max_log10, float(mel.max()) * 4 - 4)
        state.max_log10 = running
        diff = (part - mel).abs()
        assert float(diff.max()) <= (clip_max - running) / 4 + 1e-6
        assert bool(((diff > 0) <= (part == float(whole.min()))).all())  # only where the whole clip clamped
    assert float((whole - stream).abs().max()) > 0  # the bound is not vacuous here: block 0 did floor lower
    assert clip_max - FLOOR_LOG10 > -10  # the silence (log10 1e-10) lies below the whole clip's floor
    reply = Engine(chat).submit(SpeakRequest("", mode="chat", audio=streamed(samples)), collect=True).result()
    assert reply.tokens["thinker_decode"] == generate_tokens(chat, samples, "", features)


def test_a_checkpoint_without_its_feature_extractor_is_refused(tiny_checkpoint, tmp_path):
    bare = tmp_path / "bare"
    shutil.copytree(tiny_checkpoint, bare, ignore=shutil.ignore_patterns("preprocessor_config.json"))
    card = greedy_card(tmp_path, "bare_card")
    with pytest.raises(SpecError, match="has no preprocessor_config.json: the audio encoder needs"):
        load(str(card), "chat", settings={"model_path": str(bare)})


def test_the_spoken_answer_equals_generate_given_the_same_audio(tiny_checkpoint, features, tmp_path):
    """Thinker ids, talker codes and the whole-utterance waveform equal generate's (the talker sees zeros at the
    audio positions, as generate hands it)."""
    card = greedy_card(tmp_path, "greedy_speech", thinker_max=12, talker_max=60)
    program = load(str(card), "chat", settings={"model_path": str(tiny_checkpoint)})
    thinker, encoder = program.roles["thinker"], program.roles["audio_encoder"]
    samples = clip(4.57, 1)
    feats = features(samples)
    prompt = thinker.listen_prompt("hello there", True)
    ids = prompt.before_ids + [prompt.audio_id] * encoder.tokens_for(len(samples)) + prompt.after_ids
    model, talker_config = thinker.model, thinker.model.config.talker_config
    captured, talker_generate = {}, model.talker.generate

    def spy(*args, **kwargs):
        captured["codes"] = talker_generate(*args, **kwargs)
        return captured["codes"]

    model.talker.generate = spy
    try:
        torch.manual_seed(0)
        with torch.no_grad():
            seq, wave = model.generate(
                torch.tensor([ids]), input_features=feats["input_features"], feature_attention_mask=feats["attention_mask"],
                speaker="Chelsie", thinker_max_new_tokens=12, talker_max_new_tokens=60, talker_do_sample=False,
                talker_eos_token_id=[talker_config.tts_codec_pad_token_id, talker_config.tts_codec_end_token_id])
    finally:
        del model.talker.generate
    ours = Engine(program).submit(SpeakRequest("hello there", mode="chat", voice="Chelsie", audio=streamed(samples)),
                                  collect=True).result()
    assert ours.error is None and ours.samples.size
    assert ours.tokens["thinker_decode"] == seq[0, len(ids):].tolist()
    assert ours.tokens["talker_decode"] == captured["codes"][0, len(ids) + 2:].tolist()
    assert np.array_equal(ours.samples, wave.reshape(-1).float().numpy())
