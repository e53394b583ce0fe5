"""The WebSocket stream's idle timeout and vllm-omni's session.config fields, with the `websockets` client."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import httpx
import numpy as np
import pytest
from serve_helpers import LONG_TEXT, serve

websockets = pytest.importorskip("websockets")
from websockets.asyncio.client import connect  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from codec_helpers import AdtsDecoder, similarity  # noqa: E402
from test_serve_ws import _collect, _pieces, _ws  # noqa: E402


@pytest.fixture(scope="module")
def impatient(toy):
    """A server that closes a stream socket after 0.5 s of silence with nothing left to send."""
    served = serve(toy, ws_idle_timeout_s=0.5)
    yield served
    served.server.stop()


def _run(coro):
    return asyncio.run(asyncio.wait_for(coro, 60))


async def _closed_by_server(ws) -> tuple[list, int, str]:
    messages = await _collect(ws)
    return messages, ws.close_code, ws.close_reason


def test_a_socket_that_sends_nothing_is_closed_with_a_reason(impatient):
    async def main():
        async with connect(_ws(impatient)) as ws:
            return await _closed_by_server(ws)

    messages, code, reason = _run(main())
    assert code == 1008 and reason == "idle timeout: no session.config for 0.5 s"
    assert [m["code"] for m in messages] == ["idle_timeout"] and "--ws-idle-timeout" in messages[0]["message"]


def test_a_client_that_stops_mid_stream_hears_what_was_complete_then_is_closed(impatient, solo_pcm):
    async def main():
        async with connect(_ws(impatient)) as ws:
            await ws.send(json.dumps({"type": "session.config", "response_format": "pcm"}))
            await ws.send(json.dumps({"type": "input.text", "text": "A whole sentence. And then the cl"}))
            return await _closed_by_server(ws)

    messages, code, reason = _run(main())
    assert code == 1008 and reason == "idle timeout: no message for 0.5 s"
    # the complete sentence is spoken whole however long that takes (a client listening is not idle);
    # the unfinished one is never submitted
    assert _pieces(messages) == [("A whole sentence.", solo_pcm("A whole sentence."))]
    assert messages[-1]["type"] == "error" and messages[-1]["code"] == "idle_timeout"
    impatient.wait_idle()  # nothing of the session is left in the engine


def test_vllm_omni_fields_this_server_cannot_honour_are_ignored_with_one_warning_each(server, solo_pcm):
    ignored = {"language": "English", "initial_codec_chunk_frames": 0, "non_streaming_mode": False,
               "max_new_tokens": 100}

    async def main():
        async with connect(_ws(server)) as ws:
            await ws.send(json.dumps({"type": "session.config", "response_format": "pcm", "speaker": "alto",
                                      "task_type": "CustomVoice", "word_timestamps": False, "ref_audio": None,
                                      "speed": 1.0, **ignored}))
            await ws.send(json.dumps({"type": "input.text", "text": "Hello there."}))
            await ws.send(json.dumps({"type": "input.done"}))
            return await _collect(ws)

    messages = _run(main())
    warnings = [m for m in messages if isinstance(m, dict) and m["type"] == "warning"]
    assert sorted(w["param"] for w in warnings) == sorted(ignored)
    assert all(w["code"] == "ignored_parameter" and "ignored" in w["message"] for w in warnings)
    assert _pieces(messages) == [("Hello there.", solo_pcm("Hello there.", "alto"))]  # `speaker` is the voice


@pytest.mark.parametrize("config,param", [
    ({"ref_audio": "data:audio/wav;base64,AAAA"}, "ref_audio"),
    ({"speaker_embedding": [0.1, 0.2]}, "speaker_embedding"),
    ({"x_vector_only_mode": True}, "x_vector_only_mode"),
    ({"task_type": "VoiceDesign"}, "task_type"),
    ({"word_timestamps": True}, "word_timestamps"),
    ({"speaker": "nova"}, "speaker"),
    ({"sample_rate": 4000}, "sample_rate"),
])
def test_fields_that_would_change_the_voice_unheard_are_refused_naming_them(server, config, param):
    async def main():
        async with connect(_ws(server)) as ws:
            await ws.send(json.dumps({"type": "session.config", **config}))
            return await _closed_by_server(ws)

    messages, code, _ = _run(main())
    assert code == 1008 and len(messages) == 1 and messages[0]["type"] == "error" and messages[0]["param"] == param


def test_split_granularity_none_speaks_the_whole_text_once_at_input_done(server, solo_pcm):
    async def main():
        async with connect(_ws(server)) as ws:
            await ws.send(json.dumps({"type": "session.config", "response_format": "pcm", "split_granularity": "none"}))
            for delta in ["One sentence. ", "Two sentences."]:
                await ws.send(json.dumps({"type": "input.text", "text": delta}))
            await ws.send(json.dumps({"type": "input.done"}))
            return await _collect(ws)

    text = "One sentence. Two sentences."
    assert _pieces(_run(main())) == [(text, solo_pcm(text))]


def test_sample_rate_and_aac_over_the_socket(server, solo_pcm):
    pytest.importorskip("av")

    async def main():
        async with connect(_ws(server)) as ws:
            await ws.send(json.dumps({"type": "session.config", "response_format": "aac", "sample_rate": 16000}))
            await ws.send(json.dumps({"type": "input.text", "text": "Hello there."}))
            await ws.send(json.dumps({"type": "input.done"}))
            return await _collect(ws)

    messages = _run(main())
    start = next(m for m in messages if isinstance(m, dict) and m["type"] == "audio.start")
    assert start["format"] == "aac" and start["sample_rate"] == 16000
    decoder = AdtsDecoder()
    for frame in (m for m in messages if isinstance(m, bytes)):
        decoder.feed(frame)
    samples, rate = decoder.finish()
    import soxr

    reference = soxr.resample(np.frombuffer(solo_pcm("Hello there."), "<i2").astype(np.float32) / 32767, 24000, 16000)
    assert rate == 16000 and similarity(samples, reference)[0] >= 0.95


def test_session_close_ends_the_session_and_cancels_what_is_unsaid(impatient):
    async def main():
        async with connect(_ws(impatient)) as ws:
            await ws.send(json.dumps({"type": "session.config", "response_format": "pcm"}))
            await ws.send(json.dumps({"type": "input.text", "text": LONG_TEXT + ". " + LONG_TEXT + ". "}))
            while not isinstance(await ws.recv(), bytes):
                pass
            await ws.send(json.dumps({"type": "session.close"}))  # after the first audio: both pieces submitted
            return await _closed_by_server(ws)

    messages, code, _ = _run(main())
    assert code == 1000 and not any(isinstance(m, dict) and m["type"] == "error" for m in messages)
    impatient.wait_idle()
    assert impatient.engine.budget.reserved == 0
    metrics = httpx.get(impatient.url + "/metrics").text
    assert 'omni_requests_total{endpoint="stream",status="cancelled"} 2' in metrics
