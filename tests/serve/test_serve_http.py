"""httpx against `omni serve`: SSE, raw streaming, every format, and every bad input as a 4xx in OpenAI's shape."""

from __future__ import annotations

import base64
import io
import json

import httpx
import numpy as np
import pytest
import soundfile
from serve_helpers import CARD, LONG_TEXT

from omni_cli.audio.pcm import UNKNOWN_SIZE, wav_header

TEXT = "Streaming speech, chunk by chunk."


def speech(server, **body):
    return httpx.post(server.url + "/v1/audio/speech", json={"model": CARD, "input": TEXT, **body}, timeout=60)


def sse_events(text: str) -> list[dict]:
    out = []
    for block in text.split("\n\n"):
        if block.strip():
            assert block.startswith("data: "), block
            out.append(json.loads(block[len("data: "):]))
    return out


def test_sse_deltas_are_the_pcm_of_the_solo_run_then_done_with_usage(server, solo_pcm):
    r = speech(server, response_format="pcm", stream=True, seed=4)
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
    events = sse_events(r.text)
    deltas = [e for e in events if e["type"] == "speech.audio.delta"]
    assert len(deltas) > 1 and events[-1]["type"] == "speech.audio.done" and events[:-1] == deltas
    assert b"".join(base64.b64decode(e["audio"]) for e in deltas) == solo_pcm(TEXT, seed=4)
    usage = events[-1]["usage"]
    assert usage["output_tokens"] > 0 and usage["input_tokens"] > 0
    assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"]
    assert usage["omni"]["ttfa_s"] > 0 and sum(usage["omni"]["work_units"].values()) > len(deltas)


def test_sse_with_stream_format_and_wav_joins_into_a_streaming_wav(server, solo_pcm):
    r = speech(server, response_format="wav", stream_format="sse")
    data = b"".join(base64.b64decode(e["audio"]) for e in sse_events(r.text) if e["type"] == "speech.audio.delta")
    assert data == wav_header(24000, 1, UNKNOWN_SIZE) + solo_pcm(TEXT)


def test_raw_wav_stream_has_a_streaming_header_then_the_samples(server, solo_pcm):
    with httpx.stream("POST", server.url + "/v1/audio/speech", timeout=60,
                      json={"model": CARD, "input": TEXT, "response_format": "wav", "stream_format": "audio"}) as r:
        assert r.status_code == 200 and "content-length" not in r.headers
        assert r.headers["transfer-encoding"] == "chunked"
        parts = list(r.iter_raw())
    body = b"".join(parts)
    assert body == wav_header(24000, 1, UNKNOWN_SIZE) + solo_pcm(TEXT)


@pytest.mark.parametrize("fmt", ["wav", "flac"])
def test_whole_lossless_files_hold_exactly_the_solo_samples(server, solo_pcm, fmt):
    r = speech(server, response_format=fmt)
    assert r.status_code == 200 and int(r.headers["content-length"]) == len(r.content)
    samples, rate = soundfile.read(io.BytesIO(r.content), dtype="int16")
    assert rate == 24000 and samples.tobytes() == solo_pcm(TEXT)


@pytest.mark.parametrize("fmt", ["mp3", "opus"])
def test_lossy_formats_decode_to_the_right_length_where_libsndfile_writes_them(server, solo_pcm, fmt):
    from omni_cli.audio.encode import can_encode

    r = speech(server, response_format=fmt)
    if can_encode(fmt, 24000) is not None:  # this libsndfile cannot: a clear 400, never a broken file
        assert r.status_code == 400 and r.json()["error"]["param"] == "response_format"
        return
    assert r.status_code == 200
    samples, rate = soundfile.read(io.BytesIO(r.content), dtype="float32")
    expected = len(solo_pcm(TEXT)) // 2
    assert rate == 24000 and abs(samples.shape[0] - expected) <= 2400  # codec padding, under 0.1 s
    assert np.abs(samples).max() > 0.01


def _error(r, status, param=None, code=None):
    assert r.status_code == status, r.text
    error = r.json()["error"]
    assert set(error) == {"message", "type", "param", "code"} and error["message"]
    assert "Traceback" not in r.text
    if param is not None:
        assert error["param"] == param, error
    if code is not None:
        assert error["code"] == code, error
    return error


BAD_BODIES = [  # (json body, status, param, code)
    ({"input": "Hi"}, 400, "model", "missing_required_parameter"),
    ({"model": CARD}, 400, "input", "missing_required_parameter"),
    ({"model": "tts-1", "input": "Hi"}, 404, "model", "model_not_found"),
    ({"model": CARD, "input": "Hi", "voice": "nova"}, 400, "voice", "unknown_voice"),
    ({"model": CARD, "input": "Hi", "voice": {"id": "nova"}}, 400, "voice", "unknown_voice"),
    ({"model": CARD, "input": "   "}, 400, "input", "empty_input"),
    ({"model": CARD, "input": "x" * 2001}, 400, "input", "input_too_long"),
    ({"model": CARD, "input": 5}, 400, "input", "invalid_type"),
    ({"model": CARD, "input": "Hi", "seed": "7"}, 400, "seed", "invalid_type"),
    ({"model": CARD, "input": "Hi", "seed": True}, 400, "seed", "invalid_type"),
    ({"model": CARD, "input": "Hi", "seed": -1}, 400, "seed", "invalid_value"),
    ({"model": CARD, "input": "Hi", "max_tokens": 0}, 400, "max_tokens", "invalid_value"),
    ({"model": CARD, "input": "Hi", "speed": 2.0}, 400, "speed", "unsupported_value"),
    ({"model": CARD, "input": "Hi", "instructions": "whisper"}, 400, "instructions", "unsupported_parameter"),
    ({"model": CARD, "input": "Hi", "response_format": "ogg"}, 400, "response_format", "invalid_value"),
    ({"model": CARD, "input": "Hi", "response_format": "m4a", "stream": True}, 400, "response_format", None),
    ({"model": CARD, "input": "Hi", "stream_format": "mp4"}, 400, "stream_format", "invalid_value"),
    ({"model": CARD, "input": "Hi", "mode": "sing"}, 400, "mode", "invalid_value"),
    ({"model": CARD, "input": "Hi", "temperature": 0.5}, 400, "temperature", "unknown_parameter"),
]


@pytest.mark.parametrize("body,status,param,code", BAD_BODIES, ids=[str(i) for i in range(len(BAD_BODIES))])
def test_every_bad_speech_body_is_a_4xx_naming_the_field(server, body, status, param, code):
    _error(httpx.post(server.url + "/v1/audio/speech", json=body), status, param, code)


@pytest.mark.parametrize("raw", [b"{bad json", b"[1, 2]", b"\xff\xfe{}", b"", b"null"])
def test_bodies_that_are_not_a_json_object_are_400(server, raw):
    _error(httpx.post(server.url + "/v1/audio/speech", content=raw), 400, code="invalid_json")


def test_bodies_and_headers_over_the_caps_are_refused(server):
    big = {"model": CARD, "input": "x" * (server.ctx.options.max_body_bytes + 1)}
    _error(httpx.post(server.url + "/v1/audio/speech", json=big), 413, code="request_too_large")

    def chunked():  # no Content-Length: the cap holds while the body streams in
        for _ in range(100):
            yield b" " * 4096
    _error(httpx.post(server.url + "/v1/audio/speech", content=chunked()), 413, code="request_too_large")
    _error(httpx.get(server.url + "/health", headers={"X-Big": "y" * (20 << 10)}), 431, code="headers_too_large")
    assert httpx.get(server.url + "/health").status_code == 200  # and the server goes on


def test_unknown_routes_and_methods_are_openai_shaped(server):
    _error(httpx.get(server.url + "/v1/nope"), 404, code="not_found")
    _error(httpx.get(server.url + "/v1/audio/speech"), 405, code="method_not_allowed")


CHAT = {"model": CARD, "messages": [{"role": "user", "content": "Hi"}], "modalities": ["text", "audio"],
        "audio": {"voice": "alto", "format": "wav"}}
BAD_CHATS = [
    ({**CHAT, "modalities": ["text"]}, "modalities"),
    ({k: v for k, v in CHAT.items() if k != "audio"}, "audio"),
    ({**CHAT, "audio": {"voice": "nova", "format": "wav"}}, "audio.voice"),
    ({**CHAT, "audio": {"voice": "alto", "format": "aiff"}}, "audio.format"),
    ({**CHAT, "stream": True}, "audio.format"),  # streamed audio is pcm16
    ({**CHAT, "messages": [{"role": "system", "content": "Be brief."}]}, "messages"),
    ({**CHAT, "messages": [{"role": "robot", "content": "Hi"}]}, "messages[0].role"),
    ({**CHAT, "messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}]},
     "messages[0].content[0].image_url.url"),
    ({**CHAT, "n": 2}, "n"),
    ({**CHAT, "temperature": 0.2}, "temperature"),
]


@pytest.mark.parametrize("body,param", BAD_CHATS, ids=[p for _, p in BAD_CHATS])
def test_every_bad_chat_body_is_a_400_naming_the_field(server, body, param):
    _error(httpx.post(server.url + "/v1/chat/completions", json=body), 400, param)


def test_voices_models_health_and_metrics(server):
    voices = httpx.get(server.url + "/v1/audio/voices").json()
    assert voices["voices"] == ["alto", "tenor"] and voices["default"] == "alto"
    models = httpx.get(server.url + "/v1/models").json()
    assert models["object"] == "list" and models["data"][0]["id"] == CARD
    assert {"wav", "pcm", "flac"} <= set(models["data"][0]["response_formats"])
    health = httpx.get(server.url + "/health").json()
    assert health["status"] == "ok" and health["budget_capacity_bytes"] > 0
    speech(server, response_format="pcm")
    text = httpx.get(server.url + "/metrics").text
    lines = dict(line.rsplit(" ", 1) for line in text.splitlines() if line and not line.startswith("#"))
    assert int(lines['omni_requests_total{endpoint="speech",status="finished"}']) >= 1
    assert int(lines['omni_work_units_total{kind="audio_chunk"}']) >= 1
    assert int(lines["omni_ttfa_seconds_count"]) >= 1 and float(lines["omni_audio_seconds_total"]) > 0
    assert lines["omni_memory_budget_capacity_bytes"] == str(health["budget_capacity_bytes"])
    assert "omni_queue_depth" in lines


def test_a_long_request_does_not_hold_up_the_health_route(server):
    with httpx.stream("POST", server.url + "/v1/audio/speech", timeout=60,
                      json={"model": CARD, "input": LONG_TEXT, "response_format": "pcm"}) as r:
        parts = r.iter_raw()  # kept: an iterator dropped early closes the response
        next(parts)
        health = httpx.get(server.url + "/health", timeout=5).json()
        assert health["active"] >= 1 and health["budget_reserved_bytes"] > 0
    # leaving early cancelled it: nothing stays open or reserved
    server.wait_idle()
    assert server.engine.budget.reserved == 0
