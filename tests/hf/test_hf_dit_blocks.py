"""The DiT's attention block by block (`BlockedAttention`) against transformers' whole-window masked attention."""

from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

import torch.nn.functional as F  # noqa: E402
from hf_cards import run_example  # noqa: E402

from omni_cli.backends.hf import build  # noqa: E402
from omni_cli.backends.hf.dit import BlockedAttention, ODESettings, sample_window, speaker_features  # noqa: E402


def snr_db(reference: torch.Tensor, other: torch.Tensor) -> float:
    error = float(((reference.double() - other.double()) ** 2).sum())
    return math.inf if error == 0 else 10 * math.log10(float((reference.double() ** 2).sum()) / error)


def whole_window(query, key, value, block: int, back: int, ahead: int) -> torch.Tensor:
    """What DiTDecoderLayer computes: every frame against every frame, the block mask dropping the rest."""
    frames = query.shape[2]
    blocks = torch.arange(frames) // block
    diff = blocks[None, :] - blocks[:, None]  # key block - query block, as `_create_block_diff`
    allowed = (diff >= -back) & (diff <= ahead)
    out = F.scaled_dot_product_attention(query, key, value, attn_mask=allowed)
    return out.transpose(1, 2).reshape(query.shape[0], frames, -1)


@pytest.mark.parametrize("frames", [1, 23, 24, 25, 72, 100, 264])
@pytest.mark.parametrize("back, ahead", [(0, 0), (1, 0), (0, 1), (1, 1)])
def test_blocks_attend_to_exactly_what_the_block_mask_keeps(frames, back, ahead):
    generator = torch.Generator().manual_seed(frames * 10 + back * 2 + ahead)
    query, key, value = (torch.randn(3, 2, frames, 16, generator=generator, dtype=torch.float64) for _ in range(3))
    blocked = BlockedAttention(frames, 24, back, ahead, torch.float64, torch.device("cpu"))
    made = blocked(query, key, value)
    assert made.shape == (3, frames, 32) and torch.isfinite(made).all()
    # in float64 the order of the sums is far below the tolerance; a block off by one is far above it
    assert torch.allclose(made, whole_window(query, key, value, 24, back, ahead), atol=1e-12, rtol=0)
    if frames > 24 * (back + 1):  # a block that sees one more block back would see other keys
        wrong = whole_window(query, key, value, 24, back + 1, ahead)
        assert not torch.allclose(made, wrong, atol=1e-3, rtol=0)


@pytest.fixture
def blocked_calls(monkeypatch) -> list[int]:
    """The frames of each block-by-block attention call (proof the blocks ran: their sums may come out
    bit-equal to the whole window's, which is no proof either way)."""
    calls: list[int] = []
    made = BlockedAttention.__call__

    def counted(self, query, key, value):
        calls.append(query.shape[2])
        return made(self, query, key, value)

    monkeypatch.setattr(BlockedAttention, "__call__", counted)
    return calls


@pytest.fixture(scope="module")
def vocoders(tiny_checkpoint):
    settings = {"model_path": str(tiny_checkpoint)}
    # blocks against transformers' attention, everything else eager
    eager = {"dit_num_steps": 4, "dit_ahead_of_time": False, "bigvgan_ahead_of_time": False}
    return (build(None, {"vocoder": eager}, settings)["vocoder"],
            build(None, {"vocoder": {**eager, "dit_block_attention_from": 0}}, settings)["vocoder"])


def test_a_window_of_five_blocks_or_more_attends_by_blocks_within_rounding(vocoders, blocked_calls):
    blocks_vocoder, whole_vocoder = vocoders
    assert (blocks_vocoder.blocked_from, whole_vocoder.blocked_from) == (5, 0)  # the default, and off
    dit = blocks_vocoder.dit
    voice = blocks_vocoder.new_state("Chelsie", seed=1).voice
    settings = ODESettings(num_steps=4)
    features = speaker_features(dit, voice.ref_mel, settings.is_guided)
    for frames, blocked in ((96, False), (120, True), (264, True)):  # 4, 5 and 11 blocks of 24 frames
        generator = torch.Generator().manual_seed(frames)
        noise = torch.randn(2, frames, dit.mel_dim, generator=generator)
        codes = torch.randint(0, 120, (2, frames // 2), generator=generator)

        def mel(blocked_from: int, noise=noise, codes=codes):
            return sample_window(dit, noise, codes, voice.cond.expand(2, -1), features, settings, None, blocked_from)

        whole = mel(0)
        assert blocked_calls == []
        by_blocks = mel(5)
        if blocked:  # each of the 4 layers in each of the 12 evaluations (4 time points)
            assert blocked_calls == [frames] * 4 * 12
            assert snr_db(whole, by_blocks) > 140, frames
        else:
            assert blocked_calls == [] and torch.equal(whole, by_blocks)  # transformers' attention itself
        blocked_calls.clear()


def test_whole_utterance_audio_is_transformers_exactly_without_blocks_and_within_rounding_with_them(
        vocoders, tiny_checkpoint, blocked_calls):
    blocks_vocoder, whole_vocoder = vocoders
    codes = [int(c) for c in np.random.default_rng(5).integers(0, 120, 150)]  # one 300-frame window (13 blocks)
    torch.manual_seed(1)
    voice = torch.load(tiny_checkpoint / "spk_dict.pt")["Ethan"]
    with torch.no_grad():
        reference = whole_vocoder.module(torch.tensor([codes]), conditioning=voice["cond"].float(),
                                         reference_mel=voice["ref_mel"].float(), num_steps=4).numpy()
    exact = whole_vocoder.synthesize(codes, "Ethan", seed=1)
    assert np.array_equal(exact, reference) and blocked_calls == []
    near = blocks_vocoder.synthesize(codes, "Ethan", seed=1)
    assert blocked_calls and set(blocked_calls) == {300}
    assert near.shape == reference.shape
    assert snr_db(torch.from_numpy(reference), torch.from_numpy(near)) > 110


def test_the_blocks_example_times_both_forms_and_says_how_close(tiny_checkpoint):
    """examples/hf_dit_blocks.py, the README's measurement behind dit_block_attention_from, on two windows."""
    lines = run_example("hf_dit_blocks.py", tiny_checkpoint, "--rounds", 1, "--repeats", 1,
                        "--windows", "1x48,2x120").splitlines()
    assert [line.split()[3:6] for line in lines] == [["1", "x", "48"], ["2", "x", "120"]], lines
    for line, blocks in zip(lines, (2, 5), strict=True):
        assert f"({blocks:2d} blocks)" in line
        before, after = (float(line.split(label)[1].split()[0]) for label in ("whole window", "block by block"))
        snr = line.split("SNR")[1].split()[0]
        assert before > 0 and after > 0 and (snr == "inf" or float(snr) > 100), line
