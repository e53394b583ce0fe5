"""StreamEncoder: each chunk's bytes come out as they are encoded, and the bytes joined decode to the audio fed in."""

from __future__ import annotations

import numpy as np
import pytest
from codec_helpers import AdtsDecoder, decode, decode_adts, similarity

from omni_cli.audio.pcm import UNKNOWN_SIZE, float_to_pcm16, wav_header
from omni_cli.audio.stream_encoder import StreamEncoder, _Sink


def _speechlike(rate: int, seconds: float = 1.5) -> np.ndarray:
    t = np.arange(int(rate * seconds)) / rate
    return (0.3 * np.sin(2 * np.pi * 180 * t) * (0.6 + 0.4 * np.sin(2 * np.pi * 3 * t))).astype(np.float32)


def _stream(fmt: str, audio: np.ndarray, rate: int, chunk: int = 1920) -> list[bytes]:
    encoder = StreamEncoder(fmt, rate)
    parts = [encoder.start()] + [encoder.encode(audio[i:i + chunk]) for i in range(0, len(audio), chunk)]
    return parts + [encoder.finish()]


def test_wav_and_pcm_are_the_samples_with_and_without_a_stream_header():
    audio = _speechlike(24000)
    pcm = float_to_pcm16(audio).tobytes()
    assert b"".join(_stream("pcm", audio, 24000)) == pcm
    assert b"".join(_stream("wav", audio, 24000)) == wav_header(24000, 1, UNKNOWN_SIZE) + pcm


@pytest.mark.parametrize("fmt", ["flac", "mp3", "opus"])
def test_a_codec_emits_bytes_before_the_end_and_decodes_to_the_audio(fmt):
    audio = _speechlike(24000)
    parts = _stream(fmt, audio, 24000)
    assert sum(1 for p in parts[:-1] if p) >= len(parts) // 2  # bytes with most chunks, not all at the close
    samples, rate = decode(b"".join(parts), "int16" if fmt == "flac" else "float32")
    assert rate == 24000
    if fmt == "flac":
        assert samples.tobytes() == float_to_pcm16(audio).tobytes()
    else:
        assert similarity(samples, audio)[0] >= 0.98


def test_opus_at_a_rate_it_cannot_carry_is_resampled_to_the_next_one():
    audio = _speechlike(22050)
    samples, rate = decode(b"".join(_stream("opus", audio, 22050)))
    assert rate == 24000 and abs(len(samples) - len(audio) * 24000 / 22050) < 960


def test_aac_streams_adts_frames_each_decodable_as_it_arrives():
    pytest.importorskip("av")
    audio = _speechlike(22050)
    decoder, decoded_so_far = AdtsDecoder(), []
    parts = _stream("aac", audio, 22050)
    for part in parts:
        decoded_so_far.append(decoder.feed(part))
    samples, rate = decoder.finish()
    assert rate == 22050 and sum(1 for n in decoded_so_far[:-1] if n > 0) >= len(parts) // 2
    # one frame of encoder priming in front, the last frame padded: within two frames of the source's length
    assert 0 <= len(samples) - len(audio) <= 2 * 1024
    correlation, snr_db = similarity(samples, audio)
    assert correlation >= 0.98 and snr_db >= 15, (correlation, snr_db)


def test_aac_at_a_rate_it_cannot_carry_is_resampled_to_the_next_one():
    pytest.importorskip("av")
    samples, rate = decode_adts(b"".join(_stream("aac", _speechlike(44000), 44000)))
    assert rate == 44100 and abs(len(samples) - 1.5 * 44100) <= 3 * 1024


def test_aac_without_pyav_is_refused_naming_the_extra(monkeypatch):
    import sys

    from omni_cli.audio.aac import AacUnavailableError
    from omni_cli.audio.encode import can_encode

    monkeypatch.setitem(sys.modules, "av", None)  # import av raises ImportError
    can_encode.cache_clear()
    try:
        reason = can_encode("aac", 24000)
        assert "PyAV" in reason and "pip install" in reason and "[serve]" in reason
        with pytest.raises(AacUnavailableError, match=r"pip install .*\[serve\]"):
            StreamEncoder("aac", 24000)
    finally:
        can_encode.cache_clear()


@pytest.mark.parametrize("fmt,rate", [("mp3", 24000), ("opus", 24000), ("opus", 22050), ("aac", 24000),
                                      ("aac", 22050), ("aac", 44000)])
def test_a_slow_codecs_first_slice_makes_audio_bytes_so_the_first_bytes_cost_one_hop(fmt, rate):
    if fmt == "aac":
        pytest.importorskip("av")
    encoder = StreamEncoder(fmt, rate)
    first = encoder.slices(_speechlike(rate, 0.5))[0]
    data = encoder.encode(first)
    assert data and len(first) < rate * 0.2  # bytes at once, from a slice well short of the chunk
    if fmt == "aac":
        assert AdtsDecoder().feed(data) > 0  # a decodable frame, not a header alone


def test_the_sink_drops_patches_to_bytes_already_handed_out():
    sink = _Sink()
    sink.write(b"header--")
    assert sink.take() == b"header--"
    sink.write(b"data")
    sink.seek(0)
    sink.write(b"HEADER-PATCH")  # the first 8 bytes are gone; the rest lands over "data" and beyond
    assert sink.seek(0, 2) == 12 and sink.take() == b"PATCH"[1:] and sink.tell() == 12


def test_an_unknown_format_is_refused_naming_the_streamable_ones():
    with pytest.raises(ValueError, match="flac, mp3, opus, aac"):
        StreamEncoder("m4a", 24000)
