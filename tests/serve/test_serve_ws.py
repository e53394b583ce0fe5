"""The WebSocket text-in endpoint against a real server on loopback, with the `websockets` client."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest
from serve_helpers import LONG_TEXT, serve

websockets = pytest.importorskip("websockets")
from websockets.asyncio.client import connect  # noqa: E402


def _ws(served) -> str:
    return served.url.replace("http://", "ws://") + "/v1/audio/speech/stream"


async def _collect(ws, utterances: int = 1) -> list:
    """Every message until the `utterances`-th session.done (input.done leaves the socket open for the next
    utterance) or until the server closes: dicts for JSON, bytes for audio."""
    out = []
    try:
        async for message in ws:
            out.append(json.loads(message) if isinstance(message, str) else message)
            if isinstance(out[-1], dict) and out[-1]["type"] == "session.done":
                utterances -= 1
                if utterances == 0:
                    break
    except websockets.exceptions.ConnectionClosedError:  # a close with a code other than 1000: ws.close_code says
        pass
    return out


def _pieces(messages) -> list[tuple[str, bytes]]:
    """(piece text, its audio bytes joined) in order, from audio.start/binary/audio.done."""
    pieces, current = [], None
    for m in messages:
        if isinstance(m, bytes):
            current[1].append(m)
        elif m["type"] == "audio.start":
            current = (m["sentence_text"], [])
        elif m["type"] == "audio.done":
            assert not m["error"] and m["total_bytes"] == sum(map(len, current[1]))
            pieces.append((current[0], b"".join(current[1])))
    return pieces


def test_each_clause_is_spoken_as_its_own_request_in_order(server, solo_pcm):
    deltas = ["Hel", "lo there,", " this is", " a test.", " And more", " words"]

    async def main():
        async with connect(_ws(server)) as ws:
            await ws.send(json.dumps({"type": "session.config", "response_format": "pcm", "split_granularity": "clause"}))
            for delta in deltas:
                await ws.send(json.dumps({"type": "input.text", "text": delta}))
            await ws.send(json.dumps({"type": "input.done"}))
            return await _collect(ws)

    messages = asyncio.run(asyncio.wait_for(main(), 60))
    assert messages[-1] == {"type": "session.done", "utterance_index": 0, "total_sentences": 3}
    pieces = _pieces(messages)
    assert [text for text, _ in pieces] == ["Hello there,", "this is a test.", "And more words"]
    for text, audio in pieces:  # the audio a piece gets is exactly what it gets alone
        assert audio == solo_pcm(text)


def test_the_first_clause_is_heard_before_the_rest_of_the_text_is_sent(server, solo_pcm):
    async def main():
        async with connect(_ws(server)) as ws:
            await ws.send(json.dumps({"type": "session.config", "response_format": "wav"}))
            await ws.send(json.dumps({"type": "input.text", "text": "First sentence here. Sec"}))
            start = json.loads(await ws.recv())
            first_audio = await ws.recv()  # arrives while the second sentence is still unfinished
            await ws.send(json.dumps({"type": "input.text", "text": "ond one."}))
            await ws.send(json.dumps({"type": "input.done"}))
            return start, first_audio, await _collect(ws)

    start, first_audio, rest = asyncio.run(asyncio.wait_for(main(), 60))
    assert start["type"] == "audio.start" and start["sentence_text"] == "First sentence here."
    assert start["sample_rate"] == 24000 and first_audio[:4] == b"RIFF" and len(first_audio) > 44
    assert rest[-1] == {"type": "session.done", "utterance_index": 0, "total_sentences": 2}
    assert [m["sentence_text"] for m in rest if isinstance(m, dict) and m["type"] == "audio.start"] == ["Second one."]


def test_closing_the_socket_cancels_what_is_not_yet_spoken(server):
    async def main():
        async with connect(_ws(server)) as ws:
            await ws.send(json.dumps({"type": "session.config"}))
            await ws.send(json.dumps({"type": "input.text", "text": LONG_TEXT + ". " + LONG_TEXT + ". "}))
            while not isinstance(await ws.recv(), bytes):
                pass
        # closed after the first audio: both pieces were submitted, neither runs to its end

    asyncio.run(asyncio.wait_for(main(), 60))
    server.wait_idle()
    assert server.engine.budget.reserved == 0
    metrics = httpx.get(server.url + "/metrics").text
    assert 'omni_requests_total{endpoint="stream",status="cancelled"} 2' in metrics


def test_bad_messages_are_errors_and_the_session_goes_on(server, solo_pcm):
    async def main():
        async with connect(_ws(server)) as ws:
            await ws.send(json.dumps({"type": "session.config", "response_format": "pcm"}))
            await ws.send("{not json")
            await ws.send(json.dumps({"type": "input.audio"}))
            await ws.send(json.dumps({"type": "input.text", "text": 5}))
            await ws.send(json.dumps({"type": "input.text", "text": "Still here."}))
            await ws.send(json.dumps({"type": "input.done"}))
            return await _collect(ws)

    messages = asyncio.run(asyncio.wait_for(main(), 60))
    errors = [m for m in messages if isinstance(m, dict) and m["type"] == "error"]
    assert [e["code"] for e in errors] == ["invalid_json", "invalid_value", "invalid_type"]
    assert _pieces(messages) == [("Still here.", solo_pcm("Still here."))]


@pytest.mark.parametrize("config,param", [
    ({"voice": "nova"}, "voice"),
    ({"response_format": "m4a"}, "response_format"),
    ({"split_granularity": "word"}, "split_granularity"),
    ({"speed": 2}, "speed"),
])
def test_a_bad_session_config_is_one_error_and_a_close(server, config, param):
    async def main():
        async with connect(_ws(server)) as ws:
            await ws.send(json.dumps({"type": "session.config", **config}))
            messages = await _collect(ws)
            return messages, ws.close_code

    messages, code = asyncio.run(asyncio.wait_for(main(), 60))
    assert len(messages) == 1 and messages[0]["type"] == "error" and messages[0]["param"] == param
    assert code == 1008


def test_with_an_api_key_the_socket_needs_it(toy):
    served = serve(toy, api_key="sesame")

    async def main():
        with pytest.raises(websockets.exceptions.InvalidStatus) as refused:
            async with connect(_ws(served)):
                pass
        assert refused.value.response.status_code == 403
        async with connect(_ws(served), additional_headers={"Authorization": "Bearer sesame"}) as ws:
            await ws.send(json.dumps({"type": "session.config"}))
            await ws.send(json.dumps({"type": "input.done"}))
            return await _collect(ws)

    try:
        assert asyncio.run(asyncio.wait_for(main(), 60)) == [{"type": "session.done", "utterance_index": 0, "total_sentences": 0}]
    finally:
        served.server.stop()


def test_text_sent_whole_starts_each_sentence_once_the_one_before_is_heard(server, solo_pcm):
    text = "One sentence first. A second one. And a third."

    async def main():
        async with connect(_ws(server)) as ws:
            await ws.send(json.dumps({"type": "session.config", "response_format": "pcm"}))
            await ws.send(json.dumps({"type": "input.text", "text": text}))
            await ws.send(json.dumps({"type": "input.done"}))
            return await _collect(ws)

    pieces = _pieces(asyncio.run(asyncio.wait_for(main(), 60)))
    assert [t for t, _ in pieces] == ["One sentence first.", "A second one.", "And a third."]
    assert all(audio == solo_pcm(t) for t, audio in pieces)
    ids = sorted({e.request_id for e in server.trace.events if e.request_id.startswith("stream-")},
                 key=lambda rid: int(rid.split("-")[1]))[-3:]
    for before, after in zip(ids[:-1], ids[1:], strict=True):  # a first audio never shares the engine with the next
        assert server.trace.phase(after, "submitted").t_s >= server.trace.phase(before, "first_audio").t_s


def test_with_stream_audio_false_each_piece_is_one_frame_at_its_end(server, solo_pcm):
    async def main():
        async with connect(_ws(server)) as ws:
            await ws.send(json.dumps({"type": "session.config", "response_format": "wav", "stream_audio": False}))
            await ws.send(json.dumps({"type": "input.text", "text": "Whole at once. Then this."}))
            await ws.send(json.dumps({"type": "input.done"}))
            return await _collect(ws)

    messages = asyncio.run(asyncio.wait_for(main(), 60))
    frames = [m for m in messages if isinstance(m, bytes)]
    assert len(frames) == 2 and [t for t, _ in _pieces(messages)] == ["Whole at once.", "Then this."]
    for frame, text in zip(frames, ["Whole at once.", "Then this."], strict=True):
        assert frame[:4] == b"RIFF" and frame[44:] == solo_pcm(text)
