"""BigVGAN as a stream (`bigvgan_seam: stream`, backends/hf/bigvgan_stream.py): each layer carries its context
between chunks, so every mel frame is decoded once, and the chunks' samples are one whole-utterance forward's
to float rounding; batched rows are the rows alone to float rounding (oneDNN's convolutions round a batch
differently, as in one whole forward: not bit for bit)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from hf_cards import run_example  # noqa: E402
from test_hf_bigvgan_seam import _streamed, _vocoder  # noqa: E402
from test_hf_token2wav import MIN_SNR_DB, random_codes, snr_db  # noqa: E402

from omni_cli.backends.base import AUDIO_CHUNK, VocoderChunkInput  # noqa: E402
from omni_cli.backends.hf.bigvgan import LeanBigVGAN  # noqa: E402
from omni_cli.backends.hf.bigvgan_stream import BigVGANStream, delay_frames, key, merge, split  # noqa: E402

STREAM_SNR_DB = 90.0  # float rounding: the same sums over the same inputs, convolutions of other lengths


def _mel(vocoder, frames: int, seed: int, rows: int = 1) -> torch.Tensor:
    return torch.randn(rows, vocoder.mel_dim, frames, generator=torch.Generator().manual_seed(seed)) * 2 - 5


def _chunked(stream: BigVGANStream, mel: torch.Tensor, sizes) -> list[np.ndarray]:
    slots, pieces, start, frames = stream.start(), [], 0, mel.shape[2]
    for size in (*sizes, frames):
        stop = min(frames, start + size)
        wave, slots = stream.push(slots, mel[:, :, start:stop], stop == frames)
        pieces.append(wave[0].numpy())
        start = stop
        if stop == frames:
            return pieces
    raise AssertionError("the sizes did not cover the mel")


@pytest.fixture(scope="module")
def vocoders(tiny_checkpoint):
    return {seam: _vocoder(tiny_checkpoint, seam, bigvgan_ahead_of_time=False) for seam in ("lookahead", "stream")}


@pytest.mark.parametrize("frames, sizes", [(100, (24, 32, 48)), (150, (40, 40, 40)), (60, (1, 1, 2, 5, 7, 9)),
                                          (9, (3,)), (1, ()), (200, (24, 32, 48, 96))])
def test_the_stream_gives_one_forwards_samples_to_float_rounding(vocoders, frames, sizes):
    vocoder = vocoders["stream"]
    lean = LeanBigVGAN(vocoder.bigvgan, fir=True)
    mel = _mel(vocoder, frames, seed=frames)
    with torch.no_grad():
        whole = lean(mel).reshape(-1).numpy()
    pieces = _chunked(BigVGANStream(lean), mel, sizes)
    assert sum(len(p) for p in pieces) == len(whole) == frames * 240
    assert snr_db(whole, np.concatenate(pieces)) > STREAM_SNR_DB


def test_a_chunks_samples_end_the_layers_look_ahead_before_its_last_frame(vocoders):
    stream = vocoders["stream"].stream
    delay = delay_frames(stream, vocoders["stream"].mel_dim)
    assert 33 < delay < 34  # conv_pre's 3 frames, then each layer's residual blocks and upsampler, in samples
    pieces = _chunked(stream, _mel(vocoders["stream"], 200, seed=1), (24, 40, 40, 40))
    made = np.cumsum([len(p) for p in pieces[:-1]]) / 240
    assert np.allclose(made, np.maximum(0, np.array([24, 64, 104, 144]) - delay), atol=1)
    assert len(pieces[0]) == 0  # 24 frames: within the look-ahead, nothing is final yet


def test_batched_rows_are_the_rows_alone_to_float_rounding(vocoders):
    stream = vocoders["stream"].stream
    mel = _mel(vocoders["stream"], 120, seed=3, rows=2)
    alone = [_chunked(stream, mel[row:row + 1], (24, 32, 48)) for row in range(2)]
    slots, start, together = [stream.start(), stream.start()], 0, []
    for stop in (24, 56, 104, 120):
        assert key(slots[0]) == key(slots[1])
        wave, batch = stream.push(merge(slots), mel[:, :, start:stop], stop == 120)
        slots, start = split(batch, 2), stop
        together.append(wave.numpy())
    for row in range(2):
        assert [len(w[row]) for w in together] == [len(p) for p in alone[row]]
        assert snr_db(np.concatenate(alone[row]), np.concatenate([w[row] for w in together])) > STREAM_SNR_DB


def test_token2wav_streams_each_frame_once_within_the_stated_snr_of_the_whole_utterance(vocoders):
    codes = random_codes(200, seed=4)
    read = {}
    for seam, vocoder in vocoders.items():
        state = vocoder.new_state("Ethan", seed=9)
        pieces = _streamed(vocoder, codes, state=state)
        read[seam] = state.bigvgan_frames
        whole = vocoder.synthesize(codes, "Ethan", seed=9)
        assert sum(len(p) for p in pieces) == len(whole) == 200 * 480
        assert snr_db(whole, np.concatenate(pieces)) > MIN_SNR_DB
    assert read["stream"] == 400  # every mel frame once
    assert read["lookahead"] > 400  # the overlap's and the look-ahead's frames again at every seam
    # one chunk: one forward, transformers' token2wav exactly either way
    one = [vocoders[seam].synthesize(codes[:60], "Chelsie", seed=1) for seam in ("lookahead", "stream")]
    assert np.array_equal(*one)


def test_token2wav_batched_stream_chunks_match_chunks_alone(vocoders):
    vocoder = vocoders["stream"]
    a, b = random_codes(120, seed=5), random_codes(120, seed=6)
    alone = [_streamed(vocoder, codes, seed=seed) for codes, seed in ((a, 1), (b, 2))]
    states = [vocoder.new_state("Ethan", seed=1), vocoder.new_state("Ethan", seed=2)]
    together, start = [[], []], 0
    for end in (24, 72, 120):
        have = min(120, end + vocoder.lookahead_codes)
        inputs = [VocoderChunkInput(s, c[:have], start, end, have == 120) for s, c in zip(states, (a, b), strict=True)]
        for row, out in enumerate(vocoder.run(AUDIO_CHUNK, inputs)):
            together[row].append(out.samples)
        start = end
    for mine, theirs in zip(together, alone, strict=True):
        assert [len(p) for p in mine] == [len(p) for p in theirs]
        assert snr_db(np.concatenate(theirs), np.concatenate(mine)) > MIN_SNR_DB  # the DiT's batch rounds
    assert all(s.is_finished and s.bigvgan_slots is None for s in states)


def test_the_stream_runs_the_activations_compiled_ahead_of_time(tiny_checkpoint):
    vocoder = _vocoder(tiny_checkpoint, "stream", bigvgan_ahead_of_time=True)
    if vocoder.bigvgan_ahead is None:
        pytest.skip(f"no compiled BigVGAN on this machine: {vocoder.ahead_failed}")
    mel = _mel(vocoder, 130, seed=7)
    with torch.no_grad():
        whole = vocoder.vocode(mel).reshape(-1).numpy()  # the compiled activations, one forward
        eager = LeanBigVGAN(vocoder.bigvgan, fir=True)(mel).reshape(-1).numpy()
    pieces = _chunked(vocoder.stream, mel, (24, 16, 24, 48))
    assert snr_db(whole, np.concatenate(pieces)) > STREAM_SNR_DB
    assert snr_db(eager, np.concatenate(pieces)) > STREAM_SNR_DB


CARD_SIZES = (12, 16, 24, 48, 96)  # the shipped card's schedule: its first chunks end within the look-ahead


def test_first_chunks_within_the_look_ahead_are_made_as_lookahead_makes_them(vocoders):
    """bigvgan_stream_fill: the first audio as early as lookahead's (the same samples), then the stream from
    frame 0, its samples from the first one not sent."""
    codes = random_codes(200, seed=4)
    states = {seam: vocoders[seam].new_state("Ethan", seed=9) for seam in vocoders}
    pieces = {seam: _streamed(vocoders[seam], codes, CARD_SIZES, state=states[seam]) for seam in vocoders}
    assert all(np.array_equal(a, b) for a, b in zip(pieces["stream"][:2], pieces["lookahead"][:2], strict=True))
    delay = vocoders["stream"].stream_delay
    assert abs(len(pieces["stream"][2]) / 240 - (104 - delay - 56)) < 1  # the stream from frame 56 on
    assert sum(len(p) for p in pieces["stream"]) == 200 * 480
    whole = vocoders["stream"].synthesize(codes, "Ethan", seed=9)
    assert snr_db(whole, np.concatenate(pieces["stream"])) > MIN_SNR_DB
    assert states["stream"].bigvgan_frames == 400 + (24 + 16) + (16 + 32 + 16)  # the two fills' calls, then once


def test_without_fill_every_frame_is_decoded_once_and_the_first_audio_waits(tiny_checkpoint):
    vocoder = _vocoder(tiny_checkpoint, "stream", bigvgan_ahead_of_time=False, bigvgan_stream_fill=False)
    codes = random_codes(200, seed=4)
    state = vocoder.new_state("Ethan", seed=9)
    pieces = _streamed(vocoder, codes, CARD_SIZES, state=state)
    assert len(pieces[0]) == 0 and abs(len(pieces[1]) / 240 - (56 - vocoder.stream_delay)) < 1
    assert state.bigvgan_frames == 400 and vocoder.seam_frames == 0  # no look-ahead mel read
    whole = vocoder.synthesize(codes, "Ethan", seed=9)
    assert snr_db(whole, np.concatenate(pieces)) > MIN_SNR_DB


@pytest.mark.slow
def test_at_the_released_width_the_stream_gives_one_forwards_samples_to_float_rounding():
    """Qwen2.5-Omni's BigVGAN as released (1536 channels, random weights): the stream within rounding of one
    forward, over the card's first chunk sizes."""
    from transformers.models.qwen2_5_omni.configuration_qwen2_5_omni import Qwen2_5OmniBigVGANConfig
    from transformers.models.qwen2_5_omni.modeling_qwen2_5_omni import Qwen2_5OmniToken2WavBigVGANModel

    torch.manual_seed(0)
    module = Qwen2_5OmniToken2WavBigVGANModel(Qwen2_5OmniBigVGANConfig()).eval()
    assert module.config.upsample_initial_channel == 1536
    lean = LeanBigVGAN(module)
    stream = BigVGANStream(lean)
    mel = torch.randn(1, module.config.mel_dim, 64, generator=torch.Generator().manual_seed(1)) * 2 - 5
    with torch.no_grad():
        whole = lean(mel).reshape(-1).numpy()
    pieces = _chunked(stream, mel, (24, 32))
    assert [len(p) for p in pieces][0] == 0 and sum(len(p) for p in pieces) == 64 * 240
    assert snr_db(whole, np.concatenate(pieces)) > STREAM_SNR_DB


def test_the_stream_example_counts_frames_decoded_and_compares_with_the_whole_decode(tiny_checkpoint):
    """examples/hf_bigvgan_stream.py, BigVGAN alone: a row per way, the stream's frames decoded once and its
    samples the whole decode's to rounding, the chunked decode's frames more than once."""
    stdout = run_example("hf_bigvgan_stream.py", tiny_checkpoint, "--codes", 40, "--rounds", 1, "--skip-engine")
    rows = {line.split()[0]: line for line in stdout.splitlines()[1:]}
    assert set(rows) == {"chunked", "stream", "filled", "whole"}, stdout
    frames = {name: float(row.split("frames decoded ")[1].split("x")[0]) for name, row in rows.items()}
    assert frames["stream"] == frames["whole"] == 1.0 and frames["chunked"] > 1.0, stdout
    assert float(rows["stream"].split("SNR vs whole ")[1].split()[0]) > STREAM_SNR_DB, stdout
