"""Stepped hf components equal transformers' Qwen2_5OmniForConditionalGeneration.generate, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from hf_driver import run_alone, run_interleaved, speak  # noqa: E402

from omni_cli.backends.base import AR_PREFILL, AR_TOKEN, ARItem, ARStepInput  # noqa: E402
from omni_cli.backends.hf import build  # noqa: E402
from omni_cli.backends.hf.tiny import PROMPT  # noqa: E402

FAST = {"vocoder": {"dit_num_steps": 4}}


@pytest.fixture(scope="session")
def parts_5_24(tiny_checkpoint):
    return build(None, {}, {"model_path": str(tiny_checkpoint), "match_hf_generate_5_24": True})


@pytest.fixture(scope="session")
def parts_fast(tiny_checkpoint):
    # 4 ODE time points instead of 10: the tests that compare our runs with each other need no more
    return build(None, FAST, {"model_path": str(tiny_checkpoint), "match_hf_generate_5_24": True})


@pytest.fixture(scope="session")
def parts_default(tiny_checkpoint):
    return build(None, FAST, {"model_path": str(tiny_checkpoint)})


@pytest.fixture(scope="session")
def reference(tiny_checkpoint):
    from transformers import Qwen2_5OmniForConditionalGeneration

    return Qwen2_5OmniForConditionalGeneration.from_pretrained(str(tiny_checkpoint)).eval()


def hf_generate(model, parts, input_ids, *, voice, seed, thinker_max, talker_max, forced=None, **kwargs):
    """generate's thinker sequence, talker ids (prefill codec ids stripped) and waveform."""
    from transformers import LogitsProcessor, LogitsProcessorList

    captured = {}
    talker_generate = model.talker.generate

    def spy(*args, **kwargs):
        captured["talker"] = talker_generate(*args, **kwargs)
        return captured["talker"]

    if forced is not None:

        class Force(LogitsProcessor):
            def __call__(self, ids, scores):
                keep = torch.full_like(scores, -float("inf"))
                keep[:, forced[ids.shape[1] - len(input_ids)]] = 0.0
                return keep

        kwargs["thinker_logits_processor"] = LogitsProcessorList([Force()])
    model.talker.generate = spy
    try:
        torch.manual_seed(seed)  # token2wav draws its noise from the global generator
        sequences, wave = model.generate(
            torch.tensor([input_ids]),
            speaker=voice,
            thinker_max_new_tokens=thinker_max,
            talker_max_new_tokens=talker_max,
            talker_do_sample=False,
            talker_eos_token_id=sorted(parts["talker"].eos_token_ids),
            **kwargs,
        )
    finally:
        del model.talker.generate
    talker_ids = captured["talker"][0, len(input_ids) + 2 :].tolist()
    return sequences[0, len(input_ids) :].tolist(), talker_ids, wave


def assert_same_as_generate(ours, ref_thinker, ref_talker, ref_wave):
    assert ours.thinker_tokens == ref_thinker
    assert ours.talker_tokens == ref_talker
    assert torch.equal(torch.from_numpy(ours.waveform), ref_wave)


def test_chat_is_bit_equal_to_generate(parts_5_24, reference):
    ours = run_alone(speak(parts_5_24, PROMPT, seed=7, thinker_max=12, talker_max=80))
    prompt = parts_5_24["thinker"].encode(PROMPT, "chat").prefill_ids
    ref = hf_generate(reference, parts_5_24, prompt, voice="Chelsie", seed=7, thinker_max=12, talker_max=80)
    # a real utterance: the thinker stopped at its EOS, the talker at codec EOS, audio for every code
    assert len(ours.thinker_tokens) > 3 and ours.thinker_tokens[-1] in parts_5_24["thinker"].eos_token_ids
    assert 30 < len(ours.codes) < 79 and ours.talker_tokens[-1] in parts_5_24["talker"].eos_token_ids
    assert len(set(ours.codes)) > 10
    assert ours.waveform.shape == (len(ours.codes) * 480,) and np.abs(ours.waveform).max() > 0
    assert_same_as_generate(ours, *ref)


def test_echo_is_bit_equal_to_generate_with_forced_reply(parts_fast, reference):
    text = "say hi"
    prompt = parts_fast["thinker"].encode(text, "echo")
    assert parts_fast["thinker"].decode_text(prompt.forced_ids) == text
    ours = run_alone(speak(parts_fast, text, mode="echo", voice="Ethan", seed=3, talker_max=50))
    forced = list(prompt.forced_ids) + [min(parts_fast["thinker"].eos_token_ids)]
    assert ours.thinker_tokens == forced
    # generate, its thinker forced through a logits processor to the same reply
    ref = hf_generate(
        reference,
        parts_fast,
        prompt.prefill_ids,
        voice="Ethan",
        seed=3,
        thinker_max=12,
        talker_max=50,
        forced=forced,
        token2wav_num_steps=4,
    )
    assert len(ours.codes) > 10
    assert_same_as_generate(ours, *ref)


def test_stream_and_barrier_hand_offs_give_the_same_outputs(parts_fast):
    barrier = run_alone(speak(parts_fast, PROMPT, seed=5, stream=False, chunk_codes=12))
    stream = run_alone(speak(parts_fast, PROMPT, seed=5, stream=True, chunk_codes=12))
    assert stream.talker_tokens == barrier.talker_tokens and len(stream.codes) > 30
    assert np.array_equal(stream.waveform, barrier.waveform)
    # streaming really interleaves: talker and vocoder units run before the thinker's last one
    last_thinker = max(i for i, u in enumerate(stream.units) if u == "thinker")
    assert "talker" in stream.units[:last_thinker]
    assert stream.units.index("vocoder") < max(i for i, u in enumerate(stream.units) if u == "talker")


def test_interleaved_requests_equal_serial_runs(parts_fast):
    def requests():
        return (
            speak(parts_fast, PROMPT, seed=1, chunk_codes=24),
            speak(parts_fast, "ok?", mode="echo", voice="Ethan", seed=2, chunk_codes=12, talker_max=30),
            speak(parts_fast, "what now", seed=3, chunk_codes=0, talker_max=20),
        )

    serial = [run_alone(gen) for gen in requests()]
    interleaved = run_interleaved(*requests())
    assert len({tuple(s.talker_tokens) for s in serial}) == 3  # three different utterances
    for alone, mixed in zip(serial, interleaved, strict=True):
        assert alone.thinker_tokens == mixed.thinker_tokens
        assert alone.talker_tokens == mixed.talker_tokens
        assert alone.waveform.size > 0 and np.array_equal(alone.waveform, mixed.waveform)


def first_items(parts, text):
    """The thinker items of a prompt's prefill and first decode step (greedy)."""
    thinker = parts["thinker"]
    prompt, cache = thinker.encode(text, "chat").prefill_ids, thinker.new_cache()
    items, consumed = [], prompt
    for step in range(2):
        res = thinker.run(AR_PREFILL if step == 0 else AR_TOKEN, [ARStepInput(cache, consumed)])[0]
        token = int(np.argmax(res.logits))
        items.append(ARItem(step, consumed, token, res.hidden, res.embeds))
        consumed = [token]
    return items


def talker_prefill_logits(parts, items):
    talker = parts["talker"]
    prefill = talker.prefill_from(items, False, "Chelsie")
    inp = ARStepInput(talker.new_cache(), prefill.token_ids, prefill=prefill.payload)
    return talker.run(AR_PREFILL, [inp])[0].logits


def test_default_prefill_adds_codec_bos_pad_like_transformers_with_a_mask(parts_default, parts_fast, reference):
    from transformers import DynamicCache

    items = first_items(parts_fast, PROMPT)
    default, like_5_24 = talker_prefill_logits(parts_default, items), talker_prefill_logits(parts_fast, items)
    # transformers' talker forward given an attention mask, as 4.x generate passed it: adds BOS/PAD
    payload = parts_default["talker"].prefill_from(items, False, "Chelsie").payload
    with torch.no_grad():
        ref = (
            reference.talker(
                inputs_embeds=payload.embeds[None].clone(),
                input_text_ids=payload.text_ids,
                attention_mask=torch.ones_like(payload.text_ids),
                use_cache=True,
                cache=DynamicCache(config=reference.talker.config),
            )
            .logits[0, -1]
            .float()
            .numpy()
        )
    reference.talker.rope_deltas = None  # that forward stored them on the module; leave it as it was
    np.testing.assert_allclose(default, ref, rtol=1e-5, atol=1e-6)
    assert np.abs(default - like_5_24).max() > 1e-2  # the setting really changes the prefill


def test_bfloat16_is_bit_equal_to_generate_in_bfloat16(tiny_checkpoint):
    from transformers import Qwen2_5OmniForConditionalGeneration

    settings = {"model_path": str(tiny_checkpoint), "dtype": "bfloat16", "match_hf_generate_5_24": True}
    parts = build(None, FAST, settings)
    assert parts["thinker"].module.dtype == torch.bfloat16 and parts["vocoder"].module.dtype == torch.float32
    reference = Qwen2_5OmniForConditionalGeneration.from_pretrained(str(tiny_checkpoint), dtype=torch.bfloat16)
    ours = run_alone(speak(parts, PROMPT, seed=2, talker_max=30))
    prompt = parts["thinker"].encode(PROMPT, "chat").prefill_ids
    ref = hf_generate(
        reference.eval(), parts, prompt, voice="Chelsie", seed=2, thinker_max=12, talker_max=30, token2wav_num_steps=4
    )
    assert len(ours.codes) > 10
    assert_same_as_generate(ours, *ref)
