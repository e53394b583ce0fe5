"""Streamed FLAC, MP3, Ogg/Opus (decoded with libsndfile) and ADTS AAC (PyAV) from `omni serve`, read as the bytes
arrive, against the WAV path."""

from __future__ import annotations

import base64
import json
import sys
from pathlib import Path

import httpx
import numpy as np
import pytest
from serve_helpers import CARD, MEDIUM_TEXT

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from codec_helpers import AdtsDecoder, decode, similarity  # noqa: E402

# lossy bounds for speech-like audio: MP3 and AAC (constant ~64 kbit/s) and Opus (libopus' default) keep its shape
LOSSY = {"mp3": (0.98, 15.0), "opus": (0.95, 10.0), "aac": (0.98, 15.0)}  # format -> (correlation, SNR dB) at least


def _solo(solo_pcm, voice=None) -> np.ndarray:
    return np.frombuffer(solo_pcm(MEDIUM_TEXT, voice), "<i2").astype(np.float32) / 32767


@pytest.mark.parametrize("fmt", ["flac", "mp3", "opus"])
def test_a_streamed_codec_decodes_as_it_arrives_and_matches_the_wav_path(server, solo_pcm, fmt):
    body = {"model": CARD, "input": MEDIUM_TEXT, "response_format": fmt, "stream_format": "audio"}
    received, decoded_so_far = b"", []
    with httpx.stream("POST", server.url + "/v1/audio/speech", json=body, timeout=60) as r:
        assert r.status_code == 200 and "content-length" not in r.headers
        assert r.headers["content-type"] == {"flac": "audio/flac", "mp3": "audio/mpeg", "opus": "audio/ogg"}[fmt]
        for part in r.iter_raw():
            received += part
            decoded_so_far.append(len(decode(received)[0]))  # every prefix that arrived is a readable stream
    assert decoded_so_far == sorted(decoded_so_far)
    assert sum(1 for n in decoded_so_far[:-1] if n > 0) >= 2  # audio came in pieces before the end
    solo = _solo(solo_pcm)
    if fmt == "flac":  # lossless: exactly the WAV path's int16 samples
        samples, rate = decode(received, "int16")
        assert rate == 24000 and samples.tobytes() == solo_pcm(MEDIUM_TEXT)
        return
    samples, rate = decode(received)
    assert rate == 24000 and abs(len(samples) - len(solo)) <= 2400  # codec delay and padding, under 0.1 s
    correlation, snr_db = similarity(samples, solo)
    assert correlation >= LOSSY[fmt][0] and snr_db >= LOSSY[fmt][1], (correlation, snr_db)


def test_sse_deltas_joined_are_the_streamed_opus_file(server, solo_pcm):
    body = {"model": CARD, "input": MEDIUM_TEXT, "response_format": "opus", "stream": True}
    r = httpx.post(server.url + "/v1/audio/speech", json=body, timeout=60)
    events = [json.loads(b[6:]) for b in r.text.split("\n\n") if b.startswith("data: ")]
    assert events[-1]["type"] == "speech.audio.done" and len(events) > 3
    data = b"".join(base64.b64decode(e["audio"]) for e in events if e["type"] == "speech.audio.delta")
    assert data[:4] == b"OggS"
    samples, rate = decode(data)
    correlation, _ = similarity(samples, _solo(solo_pcm))
    assert rate == 24000 and correlation >= LOSSY["opus"][0]


def test_without_a_response_format_the_answer_is_mp3_as_openais(server, solo_pcm):
    r = httpx.post(server.url + "/v1/audio/speech", json={"model": CARD, "input": MEDIUM_TEXT}, timeout=60)
    assert r.status_code == 200 and r.headers["content-type"] == "audio/mpeg"
    samples, rate = decode(r.content)
    assert rate == 24000 and similarity(samples, _solo(solo_pcm))[0] >= LOSSY["mp3"][0]
    model = httpx.get(server.url + "/v1/models").json()["data"][0]
    assert model["default_response_format"] == "mp3"
    assert set(model["stream_formats"]) == {"wav", "pcm", "flac", "mp3", "opus", "aac"}


def test_the_openai_client_streams_aac_decoded_frame_by_frame_as_it_arrives(server, solo_pcm):
    openai = pytest.importorskip("openai")
    pytest.importorskip("av")
    decoder, decoded_so_far = AdtsDecoder(), []
    with openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0, timeout=60) as client:
        with client.audio.speech.with_streaming_response.create(
                model=CARD, input=MEDIUM_TEXT, voice="alto", response_format="aac", stream_format="audio") as response:
            assert response.headers["content-type"] == "audio/aac" and "content-length" not in response.headers
            rid = response.headers["x-request-id"]
            readable_at_s = None
            for part in response.iter_bytes():
                at_s = server.engine.now()
                decoded_so_far.append(decoder.feed(part))
                if readable_at_s is None and decoded_so_far[-1] > 0:
                    readable_at_s = at_s
    samples, rate = decoder.finish()
    # decoded audio arrived while the engine was still making the rest
    assert readable_at_s is not None and readable_at_s < server.trace.phase(rid, "finished").t_s
    solo = _solo(solo_pcm, "alto")
    # the encoder's one frame of priming in front, the last frame padded
    assert rate == 24000 and 0 <= len(samples) - len(solo) <= 2 * 1024
    correlation, snr_db = similarity(samples, solo)
    assert correlation >= LOSSY["aac"][0] and snr_db >= LOSSY["aac"][1], (correlation, snr_db)


def test_aac_whole_is_the_same_adts_stream(server, solo_pcm):
    pytest.importorskip("av")
    r = httpx.post(server.url + "/v1/audio/speech", json={"model": CARD, "input": MEDIUM_TEXT,
                                                          "response_format": "aac"}, timeout=60)
    assert r.status_code == 200 and r.headers["content-type"] == "audio/aac"
    decoder = AdtsDecoder()
    decoder.feed(r.content)
    samples, rate = decoder.finish()
    assert rate == 24000 and similarity(samples, _solo(solo_pcm))[0] >= LOSSY["aac"][0]


def test_without_pyav_aac_is_one_400_naming_the_extra(server, monkeypatch):
    from omni_cli.audio.encode import can_encode

    monkeypatch.setitem(sys.modules, "av", None)  # `import av` raises ImportError, as where it is not installed
    can_encode.cache_clear()
    try:
        for stream in ({}, {"stream_format": "audio"}):
            r = httpx.post(server.url + "/v1/audio/speech",
                           json={"model": CARD, "input": "Hi", "response_format": "aac", **stream})
            error = r.json()["error"]
            assert r.status_code == 400 and error["param"] == "response_format"
            assert "pip install" in error["message"] and "[serve]" in error["message"]
    finally:
        can_encode.cache_clear()


@pytest.mark.parametrize("fmt", ["opus", "mp3"])
def test_the_openai_client_streams_a_codec_readable_before_the_request_ends(server, solo_pcm, fmt):
    openai = pytest.importorskip("openai")
    with openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0, timeout=60) as client:
        with client.audio.speech.with_streaming_response.create(
                model=CARD, input=MEDIUM_TEXT, voice="alto", response_format=fmt, stream_format="audio") as response:
            rid = response.headers["x-request-id"]
            received, readable_at_s = b"", None
            for part in response.iter_bytes():
                at_s = server.engine.now()  # the engine's clock, the one its trace uses
                received += part
                if readable_at_s is None and len(decode(received)[0]) > 0:
                    readable_at_s = at_s
    # audio the client could decode arrived while the engine was still making the rest
    assert readable_at_s is not None and readable_at_s < server.trace.phase(rid, "finished").t_s
    samples, _ = decode(received)
    assert similarity(samples, _solo(solo_pcm, "alto"))[0] >= LOSSY[fmt][0]
