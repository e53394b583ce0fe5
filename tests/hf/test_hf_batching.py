"""Decode steps of several requests as one ragged batch: the same tokens as alone, logits within
rounding, and a batch that fails leaves every cache as it was."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from omni_cli.backends.base import AR_PREFILL, AR_TOKEN, ARItem, ARStepInput  # noqa: E402
from omni_cli.backends.hf import build  # noqa: E402

# prompts of different lengths, so the batch really is ragged (left padding of different widths)
TEXTS = ("hi", "a much longer prompt than the others, to pad against", "what now?")
LOGITS_TOLERANCE = 1e-4  # float32 rounding of a B-row matrix product against a 1-row one is ~1e-7


@pytest.fixture(scope="module")
def parts(tiny_checkpoint):
    return build(None, {}, {"model_path": str(tiny_checkpoint)})


def thinker_items(thinker, text: str, steps: int) -> tuple[object, list[ARItem]]:
    """A request's thinker cache after its prefill and `steps` greedy decode steps, run alone."""
    cache = thinker.new_cache()
    prompt = list(thinker.encode(text, "chat").prefill_ids)
    out = thinker.run(AR_PREFILL, [ARStepInput(cache, prompt)])[0]
    items = [ARItem(0, prompt, int(np.argmax(out.logits)), out.hidden, out.embeds)]
    for k in range(1, steps + 1):
        out = thinker.run(AR_TOKEN, [ARStepInput(cache, [items[-1].token])])[0]
        items.append(ARItem(k, [items[-1].token], int(np.argmax(out.logits)), out.hidden, out.embeds))
    return cache, items


def step_both_ways(component, alone_caches, batch_caches, inputs_of):
    """One decode step of every request, alone and as one batch; returns both lists of outputs. The
    batch goes to the batched forward itself: through `run`, a batch that raised would be rerun alone
    and this comparison could not fail."""
    alone = [component.run(AR_TOKEN, [inp])[0] for inp in inputs_of(alone_caches)]
    batched = component._decode_batch(inputs_of(batch_caches))
    return alone, batched


def assert_close(alone, batched, fields=("logits",)):
    for a, b in zip(alone, batched, strict=True):
        assert not isinstance(b, Exception), b
        assert int(np.argmax(a.logits)) == int(np.argmax(b.logits))
        for name in fields:
            x, y = getattr(a, name), getattr(b, name)
            diff = float(np.max(np.abs(np.asarray(x) - np.asarray(y)))) if isinstance(x, np.ndarray) \
                else float((x - y).abs().max())
            assert diff <= LOGITS_TOLERANCE, (name, diff)


def test_thinker_ragged_batch_equals_alone_within_rounding(parts):
    thinker = parts["thinker"]
    alone = [thinker_items(thinker, t, 0)[0] for t in TEXTS]
    batch = [thinker_items(thinker, t, 0)[0] for t in TEXTS]
    assert len({c.kv.get_seq_length() for c in batch}) == len(TEXTS)  # three different lengths
    tokens = [0] * len(TEXTS)
    for _ in range(5):
        a, b = step_both_ways(thinker, alone, batch,
                              lambda caches, tokens=tokens: [ARStepInput(c, [t])
                                                             for c, t in zip(caches, tokens, strict=True)])
        assert_close(a, b, ("logits", "hidden", "embeds"))
        tokens = [int(np.argmax(out.logits)) for out in a]
    for x, y in zip(alone, batch, strict=True):  # each request's own cache took exactly its own positions
        assert x.num_positions == y.num_positions == x.kv.get_seq_length() == y.kv.get_seq_length()
        for lx, ly in zip(x.kv.layers, y.kv.layers, strict=True):
            assert float((lx.keys - ly.keys).abs().max()) <= LOGITS_TOLERANCE


def test_talker_ragged_batch_equals_alone_within_rounding(parts):
    thinker, talker = parts["thinker"], parts["talker"]
    requests = [thinker_items(thinker, t, 6)[1] for t in TEXTS]

    def prefilled():
        caches = []
        for items in requests:
            prefill = talker.prefill_from(items, True, "Chelsie")
            cache = talker.new_cache()
            talker.run(AR_PREFILL, [ARStepInput(cache, prefill.token_ids, prefill=prefill.payload)])
            caches.append(cache)
        return caches

    alone, batch = prefilled(), prefilled()
    assert len({c.kv.get_seq_length() for c in batch}) == len(TEXTS)
    tokens = [talker.codec_bos] * len(TEXTS)
    for step in range(1, 6):
        def inputs_of(caches, step=step, tokens=tokens):
            return [ARStepInput(c, [t], cond=talker.cond_for_step(items, True, step))
                    for c, t, items in zip(caches, tokens, requests, strict=True)]

        a, b = step_both_ways(talker, alone, batch, inputs_of)
        assert_close(a, b)
        tokens = [int(np.argmax(out.logits)) for out in a]


def test_a_failing_batch_steps_the_others_once_and_reports_the_broken_one(parts):
    thinker = parts["thinker"]
    caches = [thinker_items(thinker, t, 0)[0] for t in TEXTS]
    before = [c.num_positions for c in caches]
    # the middle request's token is outside the vocabulary: the batched forward raises in its embedding
    # lookup after the others' rows were built; it must not have advanced any cache
    bad = thinker.text_config.vocab_size + 5
    outs = thinker.run(AR_TOKEN, [ARStepInput(caches[0], [1]), ARStepInput(caches[1], [bad]),
                                  ARStepInput(caches[2], [1])])
    assert isinstance(outs[1], Exception)
    assert not isinstance(outs[0], Exception) and not isinstance(outs[2], Exception)
    assert [c.num_positions for c in caches] == [before[0] + 1, before[1], before[2] + 1]
    assert [c.kv.get_seq_length() for c in caches] == [before[0] + 1, before[1], before[2] + 1]
    # and the steps the survivors took are the ones they would have taken alone
    fresh = thinker_items(thinker, TEXTS[0], 0)[0]
    again = thinker.run(AR_TOKEN, [ARStepInput(fresh, [1])])[0]
    assert np.array_equal(again.logits, outs[0].logits)
