"""Several utterances on one stream socket (vllm-omni's input.done is a flush), with the `websockets` client."""

from __future__ import annotations

import asyncio
import json
import re

import httpx
import pytest
from serve_helpers import LONG_TEXT, serve

websockets = pytest.importorskip("websockets")
from test_serve_ws import _collect, _pieces, _ws  # noqa: E402
from websockets.asyncio.client import connect  # noqa: E402


@pytest.fixture(scope="module")
def impatient(toy):
    """A server that closes a stream socket after 0.5 s of silence with nothing left to send."""
    served = serve(toy, ws_idle_timeout_s=0.5)
    yield served
    served.server.stop()


def _run(coro):
    return asyncio.run(asyncio.wait_for(coro, 60))


async def _say(ws, *texts: str) -> None:
    for text in texts:
        await ws.send(json.dumps({"type": "input.text", "text": text}))
    await ws.send(json.dumps({"type": "input.done"}))


def _of_type(messages, kind: str) -> list[dict]:
    return [m for m in messages if isinstance(m, dict) and m["type"] == kind]


def _cancelled(served) -> int:
    metrics = httpx.get(served.url + "/metrics").text
    found = re.search(r'^omni_requests_total\{endpoint="stream",status="cancelled"\} (\d+)', metrics, re.M)
    return int(found.group(1)) if found else 0


def test_each_utterance_on_one_socket_gets_its_audio_in_order_with_its_index(server, solo_pcm):
    async def main():
        async with connect(_ws(server)) as ws:
            await ws.send(json.dumps({"type": "session.config", "response_format": "pcm"}))
            await _say(ws, "First one here.")
            first = await _collect(ws)  # the socket stays open after session.done
            await _say(ws, "Then a sec", "ond. And a third.")  # sent back to back, without waiting
            await _say(ws, "Last of all.")
            return first, await _collect(ws, utterances=2)

    first, rest = _run(main())
    assert first[-1] == {"type": "session.done", "utterance_index": 0, "total_sentences": 1}
    assert _of_type(rest, "session.done") == [{"type": "session.done", "utterance_index": 1, "total_sentences": 2},
                                              {"type": "session.done", "utterance_index": 2, "total_sentences": 1}]
    messages = first + rest
    texts = ["First one here.", "Then a second.", "And a third.", "Last of all."]
    assert _pieces(messages) == [(text, solo_pcm(text)) for text in texts]
    for kind in ("audio.start", "audio.done"):
        assert [(m["utterance_index"], m["sentence_index"]) for m in _of_type(messages, kind)] == \
            [(0, 0), (1, 0), (1, 1), (2, 0)]


def test_closing_the_socket_during_the_second_utterance_cancels_it(server):
    before = _cancelled(server)

    async def main():
        async with connect(_ws(server)) as ws:
            await ws.send(json.dumps({"type": "session.config", "response_format": "pcm"}))
            await _say(ws, "Short one.")
            first = await _collect(ws)
            await ws.send(json.dumps({"type": "input.text", "text": LONG_TEXT + ". " + LONG_TEXT + ". "}))
            start = json.loads(await ws.recv())
            while not isinstance(await ws.recv(), bytes):
                pass
            return first, start  # closed after the second utterance's first audio: both its pieces submitted

    first, start = _run(main())
    assert [m["error"] for m in _of_type(first, "audio.done")] == [False]
    assert start["type"] == "audio.start" and start["utterance_index"] == 1 and start["sentence_index"] == 0
    server.wait_idle()
    assert server.engine.budget.reserved == 0
    assert _cancelled(server) - before == 2


def test_a_client_that_reads_until_the_close_still_ends_after_its_one_utterance(impatient, solo_pcm):
    async def main():
        async with connect(_ws(impatient)) as ws:
            await ws.send(json.dumps({"type": "session.config", "response_format": "pcm"}))
            await _say(ws, "Only this.")
            messages = [json.loads(m) if isinstance(m, str) else m async for m in ws]  # raises on a close != 1000
            return messages, ws.close_code

    messages, code = _run(main())
    assert code == 1000 and not _of_type(messages, "error")
    assert messages[-1] == {"type": "session.done", "utterance_index": 0, "total_sentences": 1}
    assert _pieces(messages) == [("Only this.", solo_pcm("Only this."))]


def test_silence_inside_a_second_utterance_is_still_an_idle_timeout(impatient):
    async def main():
        async with connect(_ws(impatient)) as ws:
            await ws.send(json.dumps({"type": "session.config", "response_format": "pcm"}))
            await _say(ws, "Done.")
            await _collect(ws)
            await ws.send(json.dumps({"type": "input.text", "text": "And then the cl"}))
            messages = await _collect(ws)
            return messages, ws.close_code

    messages, code = _run(main())
    assert code == 1008 and [m["code"] for m in _of_type(messages, "error")] == ["idle_timeout"]
    assert not _of_type(messages, "audio.start")  # the unfinished sentence is never submitted
    impatient.wait_idle()


def test_session_config_between_utterances_replaces_it_and_inside_one_is_refused(server, solo_pcm):
    async def main():
        async with connect(_ws(server)) as ws:
            await ws.send(json.dumps({"type": "session.config", "response_format": "pcm"}))
            await _say(ws, "In pcm.")
            first = await _collect(ws)
            await ws.send(json.dumps({"type": "session.config", "voice": "nova"}))  # refused: pcm stays, socket too
            await ws.send(json.dumps({"type": "session.config", "response_format": "wav"}))
            await ws.send(json.dumps({"type": "input.text", "text": "In wav, then"}))
            await ws.send(json.dumps({"type": "session.config", "response_format": "pcm"}))  # mid-utterance
            await _say(ws, " more.")
            return first, await _collect(ws)

    first, second = _run(main())
    assert _pieces(first) == [("In pcm.", solo_pcm("In pcm."))]
    errors = _of_type(second, "error")
    assert [e["param"] for e in errors] == ["voice", "type"] and errors[1]["code"] == "utterance_in_progress"
    assert [m["format"] for m in _of_type(second, "audio.start")] == ["wav"]
    (text, audio), = _pieces(second)
    assert text == "In wav, then more." and audio[:4] == b"RIFF" and audio[44:] == solo_pcm(text)
