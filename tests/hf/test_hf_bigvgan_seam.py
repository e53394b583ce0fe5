"""`bigvgan_seam: lookahead` (issue 19, stall): each chunk's samples end at its last code, BigVGAN reading
half its overlap past the chunk from the DiT window's look-ahead mel; the streamed audio stays within the
stated SNR of one whole-utterance chunk and a single chunk is still exactly transformers'."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
yaml = pytest.importorskip("yaml")

from test_hf_token2wav import MIN_SNR_DB, random_codes, snr_db  # noqa: E402

from omni_cli.api import load  # noqa: E402
from omni_cli.backends.base import AUDIO_CHUNK, VocoderChunkInput  # noqa: E402
from omni_cli.backends.hf import build  # noqa: E402
from omni_cli.spec import SpecError, load_card, parse_yaml  # noqa: E402

CARD = Path(__file__).resolve().parents[2] / "cards" / "qwen2_5_omni.yaml"
SIZES = (24, 48, 96)  # a doubling schedule's chunks (the shipped card's before stop 33), then the rest


def _vocoder(checkpoint, seam: str, **params):
    return build(None, {"vocoder": {"dit_num_steps": 4, "bigvgan_overlap_frames": 32, "bigvgan_seam": seam, **params}},
                 {"model_path": str(checkpoint)})["vocoder"]


def _streamed(vocoder, codes: list[int], sizes=SIZES, seed: int = 9, state=None) -> list[np.ndarray]:
    """The chunks of `sizes` codes, then the rest, each run once its look-ahead codes arrived."""
    state, start, pieces = state or vocoder.new_state("Ethan", seed=seed), 0, []
    for size in (*sizes, len(codes)):
        end = min(start + size, len(codes))
        have = min(len(codes), end + vocoder.lookahead_codes)  # codes arrive: the chunk's and its look-ahead
        inp = VocoderChunkInput(state, codes[:have], start, end, have == len(codes))
        pieces.append(vocoder.run(AUDIO_CHUNK, [inp])[0].samples)
        start = end
        if end == len(codes):
            return pieces
    raise AssertionError("the sizes did not cover the codes")


@pytest.fixture(scope="module")
def vocoders(tiny_checkpoint):
    return {seam: _vocoder(tiny_checkpoint, seam) for seam in ("held", "lookahead")}


def test_lookahead_chunks_end_at_their_last_code_and_stay_close_to_the_whole_utterance(vocoders):
    codes = random_codes(200, seed=4)
    held, ahead = (_streamed(vocoders[seam], codes) for seam in ("held", "lookahead"))
    hop = 480  # samples per code: 2 mel frames of 240
    # held: each chunk's samples lag its codes by half the 32-frame overlap (16 frames, 8 codes)
    assert [len(p) // hop for p in held] == [24 - 8, 48, 96, 32 + 8]
    assert [len(p) // hop for p in ahead] == [24, 48, 96, 32]
    whole = vocoders["lookahead"].synthesize(codes, "Ethan", seed=9)
    streamed = np.concatenate(ahead)
    assert streamed.shape == whole.shape == (200 * hop,)
    assert snr_db(whole, streamed) > MIN_SNR_DB
    # the seams read look-ahead mel, which the next window computes again: not the held samples
    assert not np.array_equal(streamed, np.concatenate(held))
    assert snr_db(np.concatenate(held), streamed) > MIN_SNR_DB


def test_the_shipped_cards_chunks_stay_close_to_the_whole_utterance(vocoders):
    """The card's schedule as a request alone gets it (`first_chunk_codes` a list since stop 33: 12, 16, 24,
    then doubling): each chunk's samples end at its last code, and together they are the whole utterance's
    to the SNR the other schedules keep."""
    loop = load_card(parse_yaml(CARD.read_text(encoding="utf-8"), str(CARD))).loops["vocoder"]
    sizes = [loop.chunk_size(i) for i in range(8)]
    codes = random_codes(200, seed=4)
    pieces = _streamed(vocoders["lookahead"], codes, sizes=sizes)
    expected, start = [], 0
    while start < 200:
        expected.append(min(sizes[len(expected)], 200 - start))
        start += expected[-1]
    assert [len(p) // 480 for p in pieces] == expected
    whole = vocoders["lookahead"].synthesize(codes, "Ethan", seed=9)
    assert snr_db(whole, np.concatenate(pieces)) > MIN_SNR_DB


def test_one_chunk_is_the_same_samples_either_way(vocoders):
    codes = random_codes(30, seed=2)
    held, ahead = (vocoders[seam].synthesize(codes, "Chelsie", seed=1) for seam in ("held", "lookahead"))
    assert np.array_equal(held, ahead)


def test_batched_lookahead_chunks_match_chunks_alone(vocoders):
    vocoder = vocoders["lookahead"]
    a, b = random_codes(120, seed=5), random_codes(120, seed=6)
    alone = [_streamed(vocoder, codes, seed=seed) for codes, seed in ((a, 1), (b, 2))]
    states = [vocoder.new_state("Ethan", seed=1), vocoder.new_state("Ethan", seed=2)]
    together, start = [[], []], 0
    for size in (*SIZES, 120):
        end = min(start + size, 120)
        have = min(120, end + vocoder.lookahead_codes)
        inputs = [VocoderChunkInput(s, c[:have], start, end, have == 120) for s, c in zip(states, (a, b), strict=True)]
        for row, out in enumerate(vocoder.run(AUDIO_CHUNK, inputs)):
            together[row].append(out.samples)
        start = end
        if end == 120:
            break
    for mine, theirs in zip(together, alone, strict=True):
        assert [len(p) for p in mine] == [len(p) for p in theirs]
        assert snr_db(np.concatenate(theirs), np.concatenate(mine)) > MIN_SNR_DB


def test_a_card_whose_lookahead_seam_lacks_the_look_ahead_is_refused(tmp_path, tiny_checkpoint):
    card = yaml.safe_load(CARD.read_text())
    card["components"]["vocoder"]["params"].update(bigvgan_seam="lookahead", chunk_future_frames=8)
    path = tmp_path / "card.yaml"
    path.write_text(yaml.safe_dump(card))
    with pytest.raises(SpecError, match="reads 16 mel frames past each chunk .* chunk_future_frames is 8"):
        load(str(path), settings={"model_path": str(tiny_checkpoint)})
