"""Chunked streaming token2wav against whole-utterance token2wav (ours and transformers')."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from omni_cli.backends.base import AUDIO_CHUNK, VocoderChunkInput  # noqa: E402
from omni_cli.backends.hf import build  # noqa: E402

CHUNK_CODES = 36  # the card's chunk: 72 mel frames

# Chunked output is not bit-equal to whole-utterance output once there are two DiT windows: a window sees
# 48 past and 24 future mel frames, while the whole-utterance ODE lets context flow across the
# utterance through every attention layer of every one of its evaluations. BigVGAN's 20-frame trims
# hide its own seams. On the tiny checkpoint the difference is ~1e-6 of the signal, so the tolerance
# is 60 dB of signal-to-difference; a window or trim misplaced by a single frame falls far below it.
MIN_SNR_DB = 60.0


@pytest.fixture(scope="module")
def vocoder(tiny_checkpoint):
    """The card's vocoder with the DiT and BigVGAN eager (a window under 5 blocks is then transformers' bit for
    bit; compiled ahead of time, within rounding of it: test_hf_dit_ahead.py), 4 ODE steps."""
    return build(None, {"vocoder": {"dit_num_steps": 4, "dit_ahead_of_time": False,
                                              "bigvgan_ahead_of_time": False}},
                 {"model_path": str(tiny_checkpoint)})["vocoder"]


def random_codes(n: int, seed: int = 0) -> list[int]:
    return [int(c) for c in np.random.default_rng(seed).integers(0, 120, n)]


def stream(
    vocoder,
    codes: list[int],
    voice: str = "Chelsie",
    seed: int = 1,
    chunk: int = CHUNK_CODES,
    closed_from_start: bool = False,
):
    """Codes arrive one by one; a chunk runs once it and its look-ahead exist (or the stream closed)."""
    state, pieces, start, ran_at = vocoder.new_state(voice, seed=seed), [], 0, []
    for have in range(len(codes) + 1):
        is_final = closed_from_start or have == len(codes)
        if closed_from_start and have < len(codes):
            continue
        while start < have and (is_final or start + chunk + vocoder.lookahead_codes <= have):
            end = min(start + chunk, have)
            inp = VocoderChunkInput(state, codes[:have], start, end, is_final)
            pieces.append(vocoder.run(AUDIO_CHUNK, [inp])[0].samples)
            ran_at.append(have)
            start = end
    return pieces, ran_at


def snr_db(reference: np.ndarray, other: np.ndarray) -> float:
    return float(10 * np.log10(np.sum(reference**2) / max(np.sum((reference - other) ** 2), 1e-30)))


def test_one_window_utterance_equals_whole_and_transformers(vocoder, tiny_checkpoint):
    codes = random_codes(30)
    pieces, _ = stream(vocoder, codes)
    assert len(pieces) == 1
    whole = vocoder.synthesize(codes, "Chelsie", seed=1)
    assert np.array_equal(pieces[0], whole)
    torch.manual_seed(1)
    voice = torch.load(tiny_checkpoint / "spk_dict.pt")["Chelsie"]
    ref = vocoder.module(
        torch.tensor([codes]), conditioning=voice["cond"].float(), reference_mel=voice["ref_mel"].float(), num_steps=4
    )
    assert torch.equal(torch.from_numpy(whole), ref)
    assert whole.shape == (30 * 480,) and np.sqrt(np.mean(whole**2)) > 0.01


def test_long_utterance_streams_in_chunks_close_to_whole(vocoder):
    codes = random_codes(100, seed=4)
    pieces, ran_at = stream(vocoder, codes, voice="Ethan", seed=9)
    # first audio after 36 + 12 codes, not after the whole utterance
    assert ran_at == [48, 84, 100]
    # each inner edge holds back 20 mel frames (240 samples each) until the next chunk re-reads them
    assert [len(p) for p in pieces] == [(72 - 20) * 240, 72 * 240, (56 + 20) * 240]
    chunked = np.concatenate(pieces)
    whole = vocoder.synthesize(codes, "Ethan", seed=9)
    assert chunked.shape == whole.shape == (100 * 480,)
    assert not np.array_equal(chunked, whole)  # two windows really ran
    assert snr_db(whole, chunked) > MIN_SNR_DB


def test_closed_stream_chunks_equal_growing_stream_chunks(vocoder):
    codes = random_codes(90, seed=2)
    growing, _ = stream(vocoder, codes, seed=3)
    closed, _ = stream(vocoder, codes, seed=3, closed_from_start=True)
    assert len(growing) == len(closed) == 3
    for a, b in zip(growing, closed, strict=True):
        assert np.array_equal(a, b)


def test_interleaved_utterances_keep_their_own_state(vocoder):
    a_codes, b_codes = random_codes(80, seed=5), random_codes(60, seed=6)
    a_alone, _ = stream(vocoder, a_codes, "Chelsie", seed=1)
    b_alone, _ = stream(vocoder, b_codes, "Ethan", seed=2)
    a_state, b_state = vocoder.new_state("Chelsie", seed=1), vocoder.new_state("Ethan", seed=2)
    plan_a = [(0, 36, False), (36, 72, True), (72, 80, True)]
    plan_b = [(0, 36, True), (36, 60, True)]
    mixed_a, mixed_b = [], []
    for i in range(3):
        for plan, state, codes, out in ((plan_a, a_state, a_codes, mixed_a), (plan_b, b_state, b_codes, mixed_b)):
            if i < len(plan):
                start, end, final = plan[i]
                inp = VocoderChunkInput(state, codes, start, end, final)
                out.append(vocoder.run(AUDIO_CHUNK, [inp])[0].samples)
    assert np.array_equal(np.concatenate(mixed_a), np.concatenate(a_alone))
    assert np.array_equal(np.concatenate(mixed_b), np.concatenate(b_alone))


def test_chunks_must_be_consecutive_and_have_look_ahead(vocoder):
    codes = random_codes(50)
    state = vocoder.new_state(None)
    with pytest.raises(ValueError, match="look-ahead"):
        vocoder.run(AUDIO_CHUNK, [VocoderChunkInput(state, codes[:40], 0, 36, False)])
    with pytest.raises(ValueError, match="does not follow"):
        vocoder.run(AUDIO_CHUNK, [VocoderChunkInput(state, codes, 12, 36, False)])
    with pytest.raises(ValueError, match="unknown voice 'Nobody'; this checkpoint has: Chelsie, Ethan"):
        vocoder.new_state("Nobody")
