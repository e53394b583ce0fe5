"""Memory accounting of the hf backend: state sized from the request's limits, no step output that keeps a
whole forward alive, batches reserved for what they hold, admission that refuses before allocating.

The resident-set comparison at real width (reserved against measured, 1 and 8 requests) is
`python examples/hf_memory.py CHECKPOINT`, run by the last test here in a child process (README: figures)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from hf_cards import greedy_card, run_example  # noqa: E402

from omni_cli.api import load  # noqa: E402
from omni_cli.backends.base import AR_PREFILL, AR_TOKEN  # noqa: E402
from omni_cli.backends.hf import build  # noqa: E402
from omni_cli.backends.hf.ar import last_logits  # noqa: E402
from omni_cli.backends.hf.token2wav import NOISE_GROWTH_FRAMES  # noqa: E402
from omni_cli.engine import Engine  # noqa: E402
from omni_cli.engine.admission import AdmissionError  # noqa: E402
from omni_cli.spec.request import SpeakRequest  # noqa: E402


@pytest.fixture(scope="module")
def parts(tiny_checkpoint):
    return build(None, {}, {"model_path": str(tiny_checkpoint)})


def test_last_logits_is_a_copy_not_a_view_of_every_position():
    logits = torch.randn(1, 55, 1000)
    row = last_logits(logits)
    assert row.base is None or not np.shares_memory(row, logits.numpy())  # 55 x vocab is freed with `out`
    assert np.array_equal(row, logits[0, -1].numpy())


def test_vocoder_state_is_sized_from_the_requests_codes(parts):
    vocoder = parts["vocoder"]
    frames = 40 * vocoder.repeats + vocoder.future_frames  # the last window's noise, drawn in blocks
    drawn = -(-frames // NOISE_GROWTH_FRAMES) * NOISE_GROWTH_FRAMES
    assert vocoder.state_bytes(40) == (drawn + vocoder.overlap_frames) * vocoder.mel_dim * 4
    assert vocoder.state_bytes(40) < vocoder.state_bytes(None)  # unknown: one minute


def test_a_batch_reserves_what_it_holds(parts):
    thinker, vocoder = parts["thinker"], parts["vocoder"]
    prefill = [thinker.step_bytes(50, 50), thinker.step_bytes(30, 30)]
    # what the engine reserves for a batch: int(component.batch_step_bytes(kind, each member's step bytes))
    assert int(thinker.batch_step_bytes(AR_PREFILL, prefill)) == max(prefill)  # one forward after another
    decode = [thinker.step_bytes(1, 50), thinker.step_bytes(1, 30)]
    assert int(thinker.batch_step_bytes(AR_TOKEN, decode)) == sum(decode)  # one forward together
    chunk = vocoder.step_bytes(8, start=0, is_final=True)
    convs, threads = vocoder.convs, vocoder.threads.count
    alone = convs.reorder_bytes(1, chunk.frames, threads) + convs.cache_bytes(1, chunk.frames, threads) + chunk.act
    assert chunk == max(chunk.dit, alone)
    # one BigVGAN call over the three (one weight copy: a batched call copies every oneDNN weight, the widest
    # included), the DiT's windows integrated together
    together = convs.reorder_bytes(3, chunk.frames, threads) + convs.cache_bytes(3, chunk.frames, threads) + 3 * chunk.act
    assert convs.reorder_bytes(3, chunk.frames, threads) == convs.widest
    assert int(vocoder.batch_step_bytes("audio_chunk", [chunk] * 3)) == max(3 * chunk.dit, together)


def test_the_onednn_rule_is_torchs_own_choice(parts):
    """onednn.py predicts which convolutions torch hands to oneDNN (and so copies the weight of) from its
    size rule; torch's own dispatcher says the same for every convolution BigVGAN calls."""
    convs = parts["vocoder"].convs
    slow = {"_ConvBackend.Slow2d", "_ConvBackend.SlowDilated2d", "_ConvBackend.SlowTranspose2d"}
    checked = set()
    for batch in (1, 2, 16):
        for frames in (1, 4, 13, 14, 40, 200):
            for c in convs.convs:
                channels, shape, transposed, stride, dilation, groups, padding = c.key
                x, w = torch.empty(batch, channels, c.length(frames)), torch.empty(shape)
                backend = str(torch._C._select_conv_backend(x, w, None, [stride], [padding], [dilation], transposed,
                                                            [0], groups, None))
                checked.add(backend not in slow)
                assert (backend not in slow) == c.uses_onednn(batch, frames, 1, torch.float32), (c, batch, frames)
    assert checked == {True, False}  # both paths were met


def test_a_new_shape_stays_reserved_once(parts):
    """What oneDNN caches at a BigVGAN length not run before is counted once: the vocoder's kept bytes grow
    by it, a second call at that length adds nothing, and an engine's budget keeps the growth reserved."""
    from omni_cli.backends.base import VocoderChunkInput
    from omni_cli.engine.admission import MemoryBudget

    vocoder = parts["vocoder"]
    budget = MemoryBudget(1 << 30, [vocoder])
    codes = list(range(1, 60))
    frames = len(codes) * vocoder.repeats
    new = vocoder.convs.cache_bytes(1, frames, vocoder.threads.count)
    assert new > 0 or vocoder.convs.entries == vocoder.convs.capacity
    before = vocoder.kept_bytes()
    for _ in range(2):
        state = vocoder.new_state(None, seed=0)
        vocoder.run("audio_chunk", [VocoderChunkInput(state, codes, 0, len(codes), True)])
        assert vocoder.kept_bytes() == before + new
        assert vocoder.convs.cache_bytes(1, frames, vocoder.threads.count) == 0
        budget.keep(vocoder)
        assert budget.reserved == new  # once, not per call


def test_the_talker_reserves_for_its_loops_limit_not_the_components(tiny_checkpoint, tmp_path):
    program = load(str(greedy_card(tmp_path, "limited", talker_max=80)), settings={"model_path": str(tiny_checkpoint)})
    talker = program.components["talker"]
    limit = program.card.loops["talker_decode"].max_tokens
    chat = SpeakRequest("hello there", mode="chat")  # the thinker's reply is bounded by its max_tokens alone
    prompt = len(program.components["thinker"].encode(chat.text, "chat").prefill_ids) + 2  # talker prefill rows
    assert prompt + limit + 1 < talker.max_positions  # else the component's bound is the loop's
    reserved = program.wire("m", chat, lambda e: None).footprint.by_loop["talker_decode"].resident_bytes
    assert reserved == talker.cache_bytes(prompt + limit + 1) < talker.cache_bytes(talker.max_positions)


@pytest.mark.slow
def test_admission_refuses_a_request_that_cannot_fit_before_allocating(realwidth_checkpoint):
    program = load("qwen2_5_omni", settings={"model_path": str(realwidth_checkpoint)})
    engine = Engine(program, memory_budget_bytes=16 << 20)  # a 3B-width prefill alone needs ~33 MiB
    with pytest.raises(AdmissionError) as refused:
        engine.submit(SpeakRequest("hi there", mode="echo"))
    assert "\n" not in str(refused.value) and "memory budget" in str(refused.value)
    assert engine.budget.reserved == 0


@pytest.mark.slow
def test_reserved_is_within_20_percent_of_the_measured_peak(realwidth_checkpoint):
    """examples/hf_memory.py at 3B width, in a fresh process: 1 request, 4 at shapes BigVGAN has not run
    (oneDNN caches their primitives) and the same 4 again; each peak resident-set growth is within 20% of
    what the engine reserved at its peak (README "At real widths": the figures, with 8; 4 here, the same
    paths in half the time)."""
    import json

    stdout = run_example("hf_memory.py", realwidth_checkpoint, "--requests", 1, 4, 4, timeout=900)
    rows = [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]
    assert [r["requests"] for r in rows] == [1, 4, 4]
    for row in rows:
        assert 0.8 <= row["measured_bytes"] / row["reserved_bytes"] <= 1.2, row
    assert rows[1]["left_reserved"] > 0 == rows[2]["left_reserved"]  # new shapes' primitives: kept, once
