"""A request that fails inside the engine: its client hears it in each answer's way; the others are unharmed."""

from __future__ import annotations

import asyncio
import base64
import json

import httpx
import pytest
from serve_helpers import CARD, serve

from omni_cli.api import load

TEXT = "A request that breaks after its first chunk of audio."


@pytest.fixture(scope="module")
def faulty():
    """A server whose vocoder breaks on every tenor chunk after the first (alto is untouched)."""
    program = load(CARD)  # its own compiled program: the session's stays sound
    vocoder = next(c for c in program.components.values() if c.role == "vocoder")
    tenor_f0 = vocoder.new_state("tenor").base_f0
    run = vocoder.run

    def breaks_on_tenor(kind, inputs):
        if any(chunk.state.base_f0 == tenor_f0 and chunk.state.frames_done > 0 for chunk in inputs):
            raise RuntimeError("injected vocoder fault")
        return run(kind, inputs)

    vocoder.run = breaks_on_tenor
    served = serve(program, concurrency=8)
    yield served
    served.server.stop()


async def _ask(http, how, voice):
    body = {"model": CARD, "input": TEXT, "voice": voice, "response_format": "pcm" if how != "whole" else "wav"}
    if how == "whole":
        r = await http.post("/v1/audio/speech", json=body)
        return r.status_code, r.json() if r.status_code != 200 else r.content[44:]
    if how == "sse":
        r = await http.post("/v1/audio/speech", json={**body, "stream": True})
        return r.status_code, [json.loads(b[6:]) for b in r.text.split("\n\n") if b.startswith("data: ")]
    try:
        async with http.stream("POST", "/v1/audio/speech", json={**body, "stream_format": "audio"}) as r:
            return r.status_code, b"".join([p async for p in r.aiter_raw()])
    except httpx.RemoteProtocolError as exc:  # the transfer was cut: never mistaken for a whole answer
        return "cut", str(exc)


def test_a_failing_request_is_reported_and_the_others_finish_as_if_alone(faulty, solo_pcm):
    hows = ["whole", "sse", "raw"]

    async def main():
        async with httpx.AsyncClient(base_url=faulty.url, timeout=60) as http:
            asks = [_ask(http, how, voice) for how in hows for voice in ("tenor", "alto")]
            return await asyncio.wait_for(asyncio.gather(*asks), 60)

    answers = dict(zip([(how, voice) for how in hows for voice in ("tenor", "alto")], asyncio.run(main()), strict=True))
    alone = solo_pcm(TEXT, "alto")
    assert answers["whole", "alto"] == (200, alone)
    assert answers["raw", "alto"] == (200, alone)
    status, events = answers["sse", "alto"]
    assert status == 200 and events[-1]["type"] == "speech.audio.done"
    assert b"".join(base64.b64decode(e["audio"]) for e in events[:-1]) == alone

    status, body = answers["whole", "tenor"]
    assert status == 500 and body["error"]["type"] == "server_error"
    assert "injected vocoder fault" in body["error"]["message"]
    status, events = answers["sse", "tenor"]
    assert status == 200 and events[0]["type"] == "speech.audio.delta"  # its first chunk came
    assert events[-1]["type"] == "error" and "injected vocoder fault" in events[-1]["error"]["message"]
    assert answers["raw", "tenor"][0] == "cut"

    faulty.wait_idle()
    assert faulty.engine.budget.reserved == 0
    assert httpx.get(faulty.url + "/health").json()["status"] == "ok"
    metrics = httpx.get(faulty.url + "/metrics").text
    assert 'omni_requests_total{endpoint="speech",status="failed"} 3' in metrics
