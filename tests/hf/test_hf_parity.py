"""The hf cascade run by the real Engine equals transformers' Qwen2_5OmniForConditionalGeneration.generate,
bit for bit; stream equals barrier and interleaved requests equal serial ones."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from hf_cards import greedy_card  # noqa: E402

from omni_cli.api import load  # noqa: E402
from omni_cli.backends.base import AR_PREFILL, AR_TOKEN, ARItem, ARStepInput  # noqa: E402
from omni_cli.backends.hf import build  # noqa: E402
from omni_cli.backends.hf.tiny import PROMPT  # noqa: E402
from omni_cli.engine import Engine  # noqa: E402
from omni_cli.engine.trace import WorkUnitEvent  # noqa: E402
from omni_cli.spec.request import SpeakRequest  # noqa: E402

FAST = {"dit_num_steps": 4}  # 4 ODE time points instead of 10: enough where ours is compared with ours


@pytest.fixture(scope="module")
def cards(tmp_path_factory):
    return tmp_path_factory.mktemp("parity_cards")


@pytest.fixture(scope="module")
def program_whole(cards, tiny_checkpoint):
    """One whole-utterance vocoder chunk, as generate computes it."""
    card = greedy_card(cards, "whole", talker_max=50, vocoder=FAST)
    return load(str(card), settings={"model_path": str(tiny_checkpoint)})


@pytest.fixture(scope="module")
def program_chunked(cards, tiny_checkpoint):
    """Vocoder chunks of 12 codes: the talker and vocoder can run while the thinker still decodes."""
    card = greedy_card(cards, "chunked", chunk_codes=12, vocoder=FAST)
    return load(str(card), settings={"model_path": str(tiny_checkpoint)})


@pytest.fixture(scope="module")
def parts_default(tiny_checkpoint):
    return build(None, {"vocoder": FAST}, {"model_path": str(tiny_checkpoint)})


@pytest.fixture(scope="module")
def reference(tiny_checkpoint):
    from transformers import Qwen2_5OmniForConditionalGeneration

    return Qwen2_5OmniForConditionalGeneration.from_pretrained(str(tiny_checkpoint)).eval()


def run(program, request, **engine_options):
    """One request through a fresh Engine: its result and the loops of its WorkUnits in the order they ran."""
    engine = Engine(program, **engine_options)
    units = []
    engine.subscribe(lambda e: units.append(e.loop) if isinstance(e, WorkUnitEvent) else None)
    result = engine.submit(request, collect=True).result()
    assert result.error is None, result.error
    return result, units


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


def assert_same_as_generate(result, ref_thinker, ref_talker, ref_wave):
    assert result.tokens["thinker_decode"] == ref_thinker
    assert result.tokens["talker_decode"] == ref_talker
    assert torch.equal(torch.from_numpy(result.samples), ref_wave)


def test_echo_is_bit_equal_to_generate_with_forced_reply(program_whole, reference):
    parts, text = program_whole.components, "say hi"
    prompt = parts["thinker"].encode(text, "echo")
    assert parts["thinker"].decode_text(prompt.forced_ids) == text
    result, _ = run(program_whole, SpeakRequest(text, mode="echo", voice="Ethan", seed=3))
    forced = list(prompt.forced_ids) + [min(parts["thinker"].eos_token_ids)]
    assert result.tokens["thinker_decode"] == forced
    # generate, its thinker forced through a logits processor to the same reply
    ref = hf_generate(reference, parts, prompt.prefill_ids, voice="Ethan", seed=3, thinker_max=12, talker_max=50,
                      forced=forced, token2wav_num_steps=4)
    assert len(result.tokens["talker_decode"]) > 10
    assert_same_as_generate(result, *ref)


def test_stream_and_barrier_hand_offs_give_the_same_outputs(program_chunked):
    barrier, barrier_units = run(program_chunked, SpeakRequest(PROMPT, mode="chat", seed=5, handoff="barrier"))
    stream, units = run(program_chunked, SpeakRequest(PROMPT, mode="chat", seed=5, handoff="stream"))
    assert stream.tokens == barrier.tokens and len(stream.tokens["talker_decode"]) > 30
    assert stream.samples.size > 0 and np.array_equal(stream.samples, barrier.samples)
    assert sorted(units) == sorted(barrier_units)  # the same WorkUnits, in another order
    # barrier: each stage starts after the previous one's last unit
    last = {loop: max(i for i, u in enumerate(barrier_units) if u == loop) for loop in set(barrier_units)}
    assert barrier_units.index("talker_decode") > last["thinker_decode"]
    assert barrier_units.index("vocoder") > last["talker_decode"]
    # stream really interleaves: talker and vocoder units run before the thinker's and talker's last ones
    last = {loop: max(i for i, u in enumerate(units) if u == loop) for loop in set(units)}
    assert units.index("talker_decode") < last["thinker_decode"]
    assert units.index("vocoder") < last["talker_decode"]


def test_interleaved_requests_equal_serial_runs(program_chunked):
    requests = [
        SpeakRequest(PROMPT, mode="chat", seed=1, request_id="a"),
        SpeakRequest("ok?", mode="echo", voice="Ethan", seed=2, request_id="b"),
        SpeakRequest("what now", mode="chat", seed=3, request_id="c"),
    ]
    serial = [run(program_chunked, r)[0] for r in requests]
    # one request per call: every WorkUnit runs as it would alone, so the outputs must be bit-equal
    engine = Engine(program_chunked, max_batch=1)
    order = []
    engine.subscribe(lambda e: order.append(e.request_id) if isinstance(e, WorkUnitEvent) else None)
    handles = [engine.submit(r, collect=True) for r in requests]
    for _ in engine.events():
        pass
    # really interleaved: another request's unit runs between each request's first and last
    for rid in "abc":
        first, last = order.index(rid), len(order) - 1 - order[::-1].index(rid)
        assert set(order[first:last]) > {rid}, rid
    assert len({tuple(s.tokens["talker_decode"]) for s in serial}) == 3  # three different utterances
    for alone, handle in zip(serial, handles, strict=True):
        mixed = handle.result()
        assert mixed.error is None and alone.tokens == mixed.tokens
        assert alone.samples.size > 0 and np.array_equal(alone.samples, mixed.samples)


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


def test_default_prefill_adds_codec_bos_pad_like_transformers_with_a_mask(parts_default, program_whole, reference):
    from transformers import DynamicCache

    parts_5_24 = program_whole.components
    items = first_items(parts_5_24, PROMPT)
    default, like_5_24 = talker_prefill_logits(parts_default, items), talker_prefill_logits(parts_5_24, items)
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


def test_bfloat16_is_bit_equal_to_generate_in_bfloat16(cards, tiny_checkpoint):
    from transformers import Qwen2_5OmniForConditionalGeneration

    card = greedy_card(cards, "whole_bf16", talker_max=30, vocoder=FAST)
    program = load(str(card), settings={"model_path": str(tiny_checkpoint), "dtype": "bfloat16"})
    parts = program.components
    assert parts["thinker"].module.dtype == torch.bfloat16 and parts["vocoder"].module.dtype == torch.float32
    reference = Qwen2_5OmniForConditionalGeneration.from_pretrained(str(tiny_checkpoint), dtype=torch.bfloat16)
    result, _ = run(program, SpeakRequest(PROMPT, mode="chat", voice="Chelsie", seed=2))
    prompt = parts["thinker"].encode(PROMPT, "chat").prefill_ids
    ref = hf_generate(reference.eval(), parts, prompt, voice="Chelsie", seed=2, thinker_max=12, talker_max=30,
                      token2wav_num_steps=4)
    assert len(result.tokens["talker_decode"]) > 10
    assert_same_as_generate(result, *ref)
