"""BigVGAN's overlap (issue 19, no work done twice): the shipped card re-reads 32 mel frames between chunks,
not 40, because BigVGAN's receptive field is under 16 frames each side: 32 gives 40's samples to float
rounding, while 24 already does not (so this test notices if the vocoder's structure changes)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
yaml = pytest.importorskip("yaml")

from test_hf_token2wav import MIN_SNR_DB, random_codes, snr_db  # noqa: E402

from omni_cli.backends.base import AUDIO_CHUNK, VocoderChunkInput  # noqa: E402
from omni_cli.backends.hf import build  # noqa: E402

CARD = Path(__file__).resolve().parents[2] / "cards" / "qwen2_5_omni.yaml"


def _streamed(checkpoint, overlap: int, codes: list[int]) -> np.ndarray:
    vocoder = build(None, {"vocoder": {"dit_num_steps": 4, "bigvgan_overlap_frames": overlap}},
                    {"model_path": str(checkpoint)})["vocoder"]
    state, start, pieces = vocoder.new_state("Ethan", seed=9), 0, []
    for size in (24, 48, 96, len(codes)):  # a doubling schedule's chunks (the shipped card's before stop 33)
        end = min(start + size, len(codes))
        pieces.append(vocoder.run(AUDIO_CHUNK, [VocoderChunkInput(state, codes, start, end, end == len(codes))])[0]
                      .samples)
        start = end
        if end == len(codes):
            break
    return np.concatenate(pieces)


def test_an_overlap_of_32_frames_gives_the_samples_of_40_and_the_card_ships_it(tiny_checkpoint):
    codes = random_codes(200, seed=4)
    wide, shipped, narrow = (_streamed(tiny_checkpoint, overlap, codes) for overlap in (40, 32, 24))
    assert wide.shape == shipped.shape == narrow.shape == (200 * 480,)
    assert np.abs(wide - shipped).max() < 1e-6 * np.abs(wide).max()  # rounding: the same computation
    assert np.abs(wide - narrow).max() > 1e-5 * np.abs(wide).max()  # inside the receptive field: it shows
    assert snr_db(wide, narrow) > MIN_SNR_DB
    card = yaml.safe_load(CARD.read_text())
    assert card["components"]["vocoder"]["params"]["bigvgan_overlap_frames"] == 32
