"""HTTP overhead of `omni serve`, as ratios measured in one run: first-byte TTFA and throughput against the library.

    python examples/bench_serve.py                      # 1, 8 and 32 streaming clients, toy card
    python examples/bench_serve.py --clients 1 8 --rounds 3 --json

For each client count N the same N requests run twice: through the library in this process (one
engine, N submitted at once, TTFA from submit to the first AudioChunk the engine hands out) and
through `omni serve` in a child process (N HTTP clients at once, raw PCM streaming, TTFA from
sending the request to the first audio byte received). Throughput is seconds of audio per wall
second. Head-of-line blocking: a short request sent 50 ms into a long one, its first byte against
the same short request alone, over HTTP and in-process (what the scheduler itself does to it).
Both sides share this machine's cores; the ratios are what counts.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import subprocess
import sys
import time

import httpx

from omni_cli.api import load
from omni_cli.engine import Engine
from omni_cli.spec import SpeakRequest
from omni_cli.spec.stream import AudioChunk, RequestDone

CARD = "qwen2_5_omni_toy"
RATE = 24000
SHORT = "The quick brown fox jumps over the lazy dog, twice."
LONG = " ".join(["The long request speaks many words in a row."] * 12)


def texts(n: int) -> list[str]:
    return [f"{SHORT} Request {i}." for i in range(n)]


def in_process(program, batch: list[str]) -> dict:
    engine = Engine(program)
    t0 = time.perf_counter()
    sent = {}
    for i, text in enumerate(batch):  # timed from before submit: wiring counts, as it does over HTTP
        start = time.perf_counter()
        sent[engine.submit(SpeakRequest(text, seed=i)).request_id] = start
    first, samples = {}, 0
    for event in engine.events():
        if isinstance(event, AudioChunk):
            first.setdefault(event.request_id, time.perf_counter() - sent[event.request_id])
            samples += event.num_samples
        elif isinstance(event, RequestDone):
            assert event.status.value == "finished", event.error
    return {"ttfa_s": list(first.values()), "audio_s": samples / RATE, "wall_s": time.perf_counter() - t0}


async def one_client(http: httpx.AsyncClient, text: str, seed: int) -> tuple[float, int]:
    body = {"model": CARD, "input": text, "seed": seed, "response_format": "pcm", "stream_format": "audio"}
    start, ttfa, size = time.perf_counter(), None, 0
    async with http.stream("POST", "/v1/audio/speech", json=body) as r:
        r.raise_for_status()
        async for part in r.aiter_raw():
            if ttfa is None and part:
                ttfa = time.perf_counter() - start
            size += len(part)
    return ttfa, size


async def served(url: str, batch: list[str]) -> dict:
    limits = httpx.Limits(max_connections=len(batch) + 2)
    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=300) as http:
        t0 = time.perf_counter()
        results = await asyncio.gather(*(one_client(http, t, i) for i, t in enumerate(batch)))
        wall = time.perf_counter() - t0
    return {"ttfa_s": [r[0] for r in results], "audio_s": sum(r[1] for r in results) / 2 / RATE, "wall_s": wall}


def head_of_line_in_process(program) -> tuple[float, float]:
    """The same two cases through the library: what the scheduler alone does to the short request."""
    alone = in_process(program, [SHORT])["ttfa_s"][0]
    engine = Engine(program)
    engine.submit(SpeakRequest(LONG, seed=2))
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < 0.05:
        engine.step()
        engine.poll()
    start = time.perf_counter()
    short = engine.submit(SpeakRequest(SHORT, seed=1)).request_id
    for event in engine.events():
        if isinstance(event, AudioChunk) and event.request_id == short:
            engine.cancel_all()
            return alone, time.perf_counter() - start
    raise RuntimeError("the short request made no audio")


async def head_of_line(url: str) -> tuple[float, float]:
    """(short alone, short sent 50 ms after a long one started): first-byte TTFA of the short one."""
    async with httpx.AsyncClient(base_url=url, timeout=300) as http:
        alone, _ = await one_client(http, SHORT, 1)
        long_task = asyncio.create_task(one_client(http, LONG, 2))
        await asyncio.sleep(0.05)
        behind, _ = await one_client(http, SHORT, 1)
        await long_task
    return alone, behind


def start_server(concurrency: int) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, "-m", "omni_cli.cli", "serve", "--port", "0", "--concurrency", str(concurrency)],
                            stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    line = proc.stderr.readline()
    found = re.search(r"http://[\d.]+:(\d+)", line)
    if not found:
        proc.kill()
        sys.exit(f"bench_serve: the server did not start: {line.strip()}")
    url = f"http://127.0.0.1:{found.group(1)}"
    deadline = time.monotonic() + 30
    while True:
        try:
            httpx.get(url + "/health").raise_for_status()
            return proc, url
        except httpx.HTTPError:
            if time.monotonic() > deadline:
                proc.kill()
                sys.exit("bench_serve: the server does not answer /health")
            time.sleep(0.05)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 8, 32])
    parser.add_argument("--rounds", type=int, default=5, help="runs per configuration; the median is kept")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    program = load(CARD)
    proc, url = start_server(max(*args.clients, 2))  # two at once at least: the head-of-line case
    rows = []
    try:
        asyncio.run(served(url, texts(2)))  # warm up both sides
        in_process(program, texts(2))
        for n in args.clients:
            lib = [in_process(program, texts(n)) for _ in range(args.rounds)]
            net = [asyncio.run(served(url, texts(n))) for _ in range(args.rounds)]
            med = statistics.median
            row = {"clients": n,
                   "lib_ttfa_ms": 1000 * med(med(r["ttfa_s"]) for r in lib),
                   "http_ttfa_ms": 1000 * med(med(r["ttfa_s"]) for r in net),
                   "lib_audio_per_s": med(r["audio_s"] / r["wall_s"] for r in lib),
                   "http_audio_per_s": med(r["audio_s"] / r["wall_s"] for r in net)}
            row["ttfa_ratio"] = row["http_ttfa_ms"] / row["lib_ttfa_ms"]
            row["throughput_ratio"] = row["http_audio_per_s"] / row["lib_audio_per_s"]
            rows.append(row)
        hol = [asyncio.run(head_of_line(url)) for _ in range(args.rounds)]
        alone, behind = statistics.median(h[0] for h in hol), statistics.median(h[1] for h in hol)
        lib_hol = [head_of_line_in_process(program) for _ in range(args.rounds)]
        lib_alone, lib_behind = statistics.median(h[0] for h in lib_hol), statistics.median(h[1] for h in lib_hol)
    finally:
        proc.terminate()
        proc.wait(10)
    summary = {"short_alone_ttfa_ms": 1000 * alone, "short_behind_long_ttfa_ms": 1000 * behind,
               "head_of_line_ratio": behind / alone, "lib_head_of_line_ratio": lib_behind / lib_alone}
    if args.json:
        for row in rows:
            print(json.dumps(row))
        print(json.dumps(summary))
        return
    print(f"{'clients':>7} {'TTFA lib':>9} {'TTFA http':>10} {'ratio':>6} {'audio/s lib':>12} {'audio/s http':>13} {'ratio':>6}")
    for r in rows:
        print(f"{r['clients']:>7} {r['lib_ttfa_ms']:>7.1f}ms {r['http_ttfa_ms']:>8.1f}ms {r['ttfa_ratio']:>5.2f}x "
              f"{r['lib_audio_per_s']:>12.1f} {r['http_audio_per_s']:>13.1f} {r['throughput_ratio']:>5.2f}x")
    print(f"head of line: a short request's first byte alone {1000 * alone:.1f} ms, sent while a long one runs "
          f"{1000 * behind:.1f} ms ({behind / alone:.2f}x); in-process {1000 * lib_alone:.1f} ms and "
          f"{1000 * lib_behind:.1f} ms ({lib_behind / lib_alone:.2f}x)")


if __name__ == "__main__":
    main()
