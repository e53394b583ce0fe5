"""Where one HTTP request to `omni serve` waits on its way to its first audio byte: a timestamp at each hand-over.

    python examples/serve_handovers.py                 # toy card, pcm, 15 requests
    python examples/serve_handovers.py --format opus --requests 30

A child `omni serve` runs with hooks on its hand-overs, each writing a CLOCK_MONOTONIC timestamp (the
clock `time.perf_counter` reads on Linux, one for every process) to a file; this process sends one request
at a time and notes when it sent it and when the first audio byte came. Printed: the median time of
each mark after the request was sent, and the step from the mark before, beside the library's own
first audio for the same text in this process (measured between the requests), and the floor of step 6:
the same first chunk handed from a thread running the engine to an idle asyncio loop in this process, with
no server code between (the engine keeps stepping meanwhile, as the server's does). The hooks wrap the
server's functions and change nothing they do.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

from omni_cli.api import load
from omni_cli.engine import Engine
from omni_cli.spec import SpeakRequest
from omni_cli.spec.stream import AudioChunk

TEXT = "The quick brown fox jumps over the lazy dog, twice."

# run in the child: wrap the hand-overs, then `omni serve` as usual
HOOKS = r'''
import json, os, sys, time
from omni_cli.serve import app, worker
from omni_cli.spec.stream import AudioChunk
log = open(os.environ["HANDOVER_LOG"], "a", buffering=1)
def mark(name):
    log.write(json.dumps([time.perf_counter(), name]) + "\n")
route = app.speech_route
async def speech_route(ctx, request):
    mark("1 request parsed, route entered")
    return await route(ctx, request)
app.speech_route = speech_route
W = worker.EngineWorker
submit, start, route_events, deliver = W.submit, W._start, W._route, W._deliver
def w_submit(self, request, prefix="speech", sample_rate=None):
    ticket = submit(self, request, prefix, sample_rate); mark("2 body checked, handed to the engine thread"); return ticket
def w_start(self, ticket):
    mark("3 engine thread took it"); start(self, ticket); mark("4 engine.submit done (request wired)")
def w_route(self, events):
    if any(isinstance(e, AudioChunk) and e.index == 0 for e in events):
        mark("5 engine made its first chunk")
    return route_events(self, events)
def w_deliver(self, ticket, item):
    if isinstance(item, AudioChunk) and item.index == 0:
        mark("6 event loop got the chunk")
    return deliver(self, ticket, item)
W.submit, W._start, W._route, W._deliver = w_submit, w_start, w_route, w_deliver
from omni_cli.cli.entry import main
sys.argv = ["omni", "serve", *sys.argv[1:]]
main()
'''


def first_byte(port: int, card: str, fmt: str) -> tuple[float, float]:
    body = json.dumps({"model": card, "input": TEXT, "response_format": fmt, "stream_format": "audio"}).encode()
    conn = http.client.HTTPConnection("127.0.0.1", port)
    sent = time.perf_counter()
    conn.request("POST", "/v1/audio/speech", body, {"Content-Type": "application/json"})
    response = conn.getresponse()
    if response.status != 200:
        raise RuntimeError(f"the server answered {response.status}: {response.read()[:300]!r}")
    skip = 44 if fmt == "wav" else 0
    while skip >= 0:
        part = response.read1(65536)
        if not part:
            raise RuntimeError("the stream ended before its first audio")
        skip -= len(part)
    first = time.perf_counter()
    response.read()
    conn.close()
    return sent, first


def library(program) -> float:
    engine = Engine(program)
    start = time.perf_counter()
    engine.submit(SpeakRequest(TEXT))
    for event in engine.events():
        if isinstance(event, AudioChunk):
            engine.cancel_all()
            return time.perf_counter() - start
    raise RuntimeError("no audio")


def bare_handover(program) -> float:
    """Seconds from `call_soon_threadsafe` on the engine's thread at its first chunk to the callback running on
    an asyncio loop's thread, while the engine goes on stepping: what any thread-to-loop hand-over costs here."""
    import asyncio
    import threading

    from omni_cli.serve.server import SWITCH_INTERVAL_S

    interval = sys.getswitchinterval()
    sys.setswitchinterval(SWITCH_INTERVAL_S)  # as `omni serve` runs its two threads
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    arrived = threading.Event()
    times: list[float] = []
    engine = Engine(program)
    engine.submit(SpeakRequest(TEXT))
    try:
        for event in engine.events():
            if isinstance(event, AudioChunk) and not times:
                times.append(time.perf_counter())
                loop.call_soon_threadsafe(lambda: (times.append(time.perf_counter()), arrived.set()))
            if arrived.is_set():
                break
        arrived.wait(10)
    finally:
        engine.cancel_all()
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()
        sys.setswitchinterval(interval)
    return times[1] - times[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--card", default="qwen2_5_omni_toy")
    parser.add_argument("--format", default="pcm", choices=["wav", "pcm", "mp3", "opus", "flac", "aac"])
    parser.add_argument("--requests", type=int, default=15)
    args = parser.parse_args()
    program = load(args.card)
    with tempfile.NamedTemporaryFile("w+", suffix=".jsonl") as log:
        proc = subprocess.Popen([sys.executable, "-c", HOOKS, "--card", args.card, "--port", "0"],
                                stderr=subprocess.PIPE, text=True,
                                env={**os.environ, "HANDOVER_LOG": log.name, "PYTHONUNBUFFERED": "1"})
        try:
            port = int(re.search(r"http://[\d.]+:(\d+)", proc.stderr.readline()).group(1))
            for _ in range(3):  # warm both sides
                first_byte(port, args.card, args.format)
                library(program)
            requests, lib, bare = [], [], []
            for _ in range(args.requests):
                requests.append(first_byte(port, args.card, args.format))
                lib.append(library(program))
                bare.append(bare_handover(program))
        finally:
            proc.terminate()
            proc.wait(10)
        marks = [json.loads(line) for line in open(log.name)]
    steps: dict[str, list[float]] = {}
    for sent, first in requests:
        seen = {}
        for t, name in marks:
            if sent <= t <= first:
                seen.setdefault(name, t)
        for name, t in [*seen.items(), ("7 client read the first audio byte", first)]:
            steps.setdefault(name, []).append(1000 * (t - sent))
    print(f"{args.card}, {args.format}, median of {args.requests} requests; ms after the request was sent")
    before = 0.0
    for name in sorted(steps):
        at = statistics.median(steps[name])
        print(f"  {name:<46} {at:7.1f}  (+{at - before:.1f})")
        before = at
    print(f"  {'library, same text, in this process':<46} {1000 * statistics.median(lib):7.1f}")
    print(f"  {'a bare thread-to-loop hand-over, engine busy':<46} {1000 * statistics.median(bare):7.1f}"
          "  (the floor of step 6)")


if __name__ == "__main__":
    main()
