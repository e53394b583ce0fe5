"""Qwen3-Omni's Code2Wav streamed with its state carried equals the whole-utterance forward, every frame once."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from omni_cli.backends.hf.code2wav import decode_chunk, new_stream, utterance_samples  # noqa: E402

# measured on the tiny checkpoint: at most 1.3e-7 of full scale (chunks of 1 to 37 frames); the bound leaves
# room for other CPUs' kernels, far below what a missing or doubled frame of context makes (~1e-2)
STREAMED_BOUND = 1e-6
NUM_FRAMES = 37  # over four of the tiny transformer's 8-frame windows: the cache drops keys as it slides


@pytest.fixture(scope="module")
def code2wav(qwen3_checkpoint):
    from transformers import Qwen3OmniMoeForConditionalGeneration

    from omni_cli.backends.hf.loading import quiet_transformers

    with quiet_transformers():
        model = Qwen3OmniMoeForConditionalGeneration.from_pretrained(str(qwen3_checkpoint)).eval()
    return model.code2wav


def _codes(seed: int = 0):
    generator = torch.Generator().manual_seed(seed)
    return torch.randint(0, 32, (1, 4, NUM_FRAMES), generator=generator)


def _streamed(code2wav, codes, sizes):
    stream, pieces, start, index = new_stream(code2wav), [], 0, 0
    while start < codes.shape[-1]:
        size = sizes[min(index, len(sizes) - 1)]
        pieces.append(decode_chunk(code2wav, codes[..., start:start + size], stream))
        start, index = start + size, index + 1
    return torch.cat(pieces, dim=-1), stream.num_frames


@pytest.mark.parametrize("sizes", [[1], [3], [2, 9, 30], [5, 7], [NUM_FRAMES]])
def test_streamed_equals_whole(code2wav, sizes):
    codes = _codes()
    with torch.no_grad():
        whole = code2wav(codes)
    assert whole.pow(2).mean().sqrt() > 0.01  # the tiny checkpoint speaks at speech level, not in whispers
    streamed, decoded = _streamed(code2wav, codes, sizes)
    assert streamed.shape == whole.shape == (1, 1, utterance_samples(code2wav, NUM_FRAMES))
    assert (streamed - whole).abs().max().item() <= STREAMED_BOUND
    assert decoded == NUM_FRAMES  # every frame decoded once: no left context re-decoded


def test_frames_decoded_beside_chunked_decode(code2wav, capsys):
    """Frames through the transformer and convolutions per utterance: ours equal the utterance's; transformers'
    chunked_decode at our chunk sizes re-decodes 25 frames of left context per chunk (printed beside)."""
    codes = _codes(1)
    counted = []
    forward = code2wav.forward

    def counting(chunk, **kwargs):
        counted.append(chunk.shape[-1])
        return forward(chunk, **kwargs)

    code2wav.forward = counting
    try:
        for chunk in (4, 8, 16):
            counted.clear()
            with torch.no_grad():
                theirs = code2wav.chunked_decode(codes, chunk_size=chunk, left_context_size=25)
            _, ours = _streamed(code2wav, codes, [chunk])
            with capsys.disabled():
                print(f"\nchunk {chunk} frames: decoded {ours} frames (ours) vs {sum(counted)} (chunked_decode) "
                      f"for a {NUM_FRAMES}-frame utterance")
            assert ours == NUM_FRAMES < sum(counted)
            assert theirs.shape[-1] > 0
    finally:
        del code2wav.forward


def test_chunk_of_wrong_shape_is_refused(code2wav):
    with pytest.raises(ValueError, match="Code2Wav chunk"):
        decode_chunk(code2wav, torch.zeros(1, 3, 2, dtype=torch.long), new_stream(code2wav))


def test_batched_chunks_equal_alone(code2wav):
    """Chunks of three requests, one length at a time, their convolutions as one batch: each request's waveform
    equals its own streamed alone within the card's batching tolerance (another batch size rounds differently)."""
    from omni_cli.backends.hf.code2wav import decode_chunks

    utterances = [_codes(seed)[..., :24] for seed in range(3)]
    alone = [_streamed(code2wav, codes, [4, 8, 12])[0] for codes in utterances]
    streams, pieces, start = [new_stream(code2wav) for _ in utterances], [[] for _ in utterances], 0
    for size in (4, 8, 12):
        made = decode_chunks(code2wav, [codes[..., start:start + size] for codes in utterances], streams)
        for row, piece in enumerate(made):
            pieces[row].append(piece)
        start += size
    for row, expected in enumerate(alone):
        together = torch.cat(pieces[row], dim=-1)
        assert together.shape == expected.shape
        assert (together - expected).abs().max().item() <= 1e-5
    assert not torch.equal(alone[0], alone[1])  # three different utterances


def test_batch_of_first_and_later_chunks_is_refused(code2wav):
    from omni_cli.backends.hf.code2wav import decode_chunks

    later = new_stream(code2wav)
    decode_chunk(code2wav, _codes()[..., :2], later)
    with pytest.raises(ValueError, match="all first chunks or none"):
        decode_chunks(code2wav, [_codes()[..., :2], _codes()[..., :2]], [new_stream(code2wav), later])
