"""64 clients at once on one server, a quarter of them leaving early: every answer equals its solo run."""

from __future__ import annotations

import asyncio
import base64
import random

import httpx
import pytest
from serve_helpers import CARD

from omni_cli.audio.pcm import UNKNOWN_SIZE, wav_header

CLIENTS = 64
WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet"]


def _plan(rng: random.Random):
    """(text, voice, seed, how) per client; how: whole wav, raw stream, SSE, or leave after the first bytes."""
    # eight distinct utterances, each asked for by several clients: fewer solo runs to compare against
    utterances = [(" ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 6))) + ".", rng.choice(["alto", "tenor"]),
                   rng.randrange(1000)) for _ in range(8)]
    leavers = set(rng.sample(range(CLIENTS), CLIENTS // 4))
    return [(*rng.choice(utterances), "leave" if i in leavers else rng.choice(["whole", "raw", "sse"]))
            for i in range(CLIENTS)]


async def _client(http: httpx.AsyncClient, text, voice, seed, how):
    body = {"model": CARD, "input": text, "voice": voice, "seed": seed, "response_format": "wav"}
    if how == "whole":
        r = await http.post("/v1/audio/speech", json=body)
        assert r.status_code == 200, r.text
        assert r.content[:44] == wav_header(24000, 1, len(r.content) - 44)
        return r.content[44:]
    if how == "sse":
        body.update(response_format="pcm", stream=True)
    else:
        body["stream_format"] = "audio"
    async with http.stream("POST", "/v1/audio/speech", json=body) as r:
        assert r.status_code == 200
        if how == "leave":
            async for _ in r.aiter_raw():
                return None  # gone after the first bytes: the server must cancel it
        if how == "raw":
            data = b"".join([part async for part in r.aiter_raw()])
            assert data[:44] == wav_header(24000, 1, UNKNOWN_SIZE)
            return data[44:]
        lines = [line async for line in r.aiter_lines() if line.startswith("data: ")]
    import json

    events = [json.loads(line[6:]) for line in lines]
    assert events[-1]["type"] == "speech.audio.done"
    return b"".join(base64.b64decode(e["audio"]) for e in events[:-1])


async def _health(http: httpx.AsyncClient, stop: asyncio.Event, answers: list):
    while not stop.is_set():
        r = await http.get("/health", timeout=5)
        answers.append(r.status_code)
        await asyncio.sleep(0.05)


@pytest.mark.slow
def test_64_clients_a_quarter_leaving_early(server, solo_pcm):
    plans = _plan(random.Random(14))

    async def main():
        limits = httpx.Limits(max_connections=CLIENTS + 4, max_keepalive_connections=0)
        async with httpx.AsyncClient(base_url=server.url, limits=limits, timeout=60) as http:
            stop, answers = asyncio.Event(), []
            health = asyncio.create_task(_health(http, stop, answers))
            results = await asyncio.wait_for(asyncio.gather(*(_client(http, *p) for p in plans)), 120)
            stop.set()
            await health
            return results, answers

    results, health_answers = asyncio.run(main())
    for (text, voice, seed, how), got in zip(plans, results, strict=True):
        if how != "leave":
            assert got == solo_pcm(text, voice, seed), (text, voice, seed, how)
    assert len(health_answers) >= 3 and set(health_answers) == {200}  # it answered all through
    server.wait_idle()
    assert server.engine.budget.reserved == 0
    phases = [e.phase for e in server.trace.events if getattr(e, "phase", None) in ("finished", "cancelled", "failed")]
    assert "failed" not in phases
    assert httpx.get(server.url + "/health").json()["active"] == 0
    counts = {line.split('status="')[1].split('"')[0]: int(line.rsplit(" ", 1)[1])
              for line in httpx.get(server.url + "/metrics").text.splitlines() if line.startswith("omni_requests_total")}
    # every request ended; those whose client left were cancelled (unless they had just finished anyway)
    assert counts.get("finished", 0) + counts.get("cancelled", 0) == CLIENTS and set(counts) <= {"finished", "cancelled"}
    assert counts["finished"] >= CLIENTS - CLIENTS // 4 and counts["cancelled"] >= 1
