"""First byte from `omni serve` per response format, and for text streamed in over the WebSocket, beside the goals.

    python examples/bench_first_byte.py                  # toy card, 9 rounds
    python examples/bench_first_byte.py --card piper_joe --rounds 5 --json

Each round runs every case once, one after another (the machine's noise falls on all of them alike):
the library in this process (TTFA: submit to the first AudioChunk; also the gap to the second chunk),
then POST /v1/audio/speech with "stream_format": "audio" to a child `omni serve` in wav, pcm, mp3,
opus, flac and aac (ADTS; where PyAV is installed) (time from sending the request to the first audio byte: for wav the first byte past its
44-byte header; the codecs' first bytes are their headers, which libsndfile writes with the first
frame), then the WebSocket /v1/audio/speech/stream with the text sent whole, and with the same text
sent word by word as an LLM would (first audio counted from when the first clause was complete).
Medians over the rounds. Goals: HTTP first byte <= 1.5x the library's; a codec's first byte no later
than one chunk after WAV's; streamed text's first audio after its first clause <= the whole text's.
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
import time

from omni_cli.api import load
from omni_cli.engine import Engine
from omni_cli.spec import SpeakRequest
from omni_cli.spec.stream import AudioChunk

TEXT = "The quick brown fox jumps over the lazy dog, twice."
STREAMED = "Here is the first clause, and here is the second one. Then a last sentence to end it."
FORMATS = ("wav", "pcm", "mp3", "opus", "flac", "aac")
WORD_GAP_S = 0.02  # an LLM's pace: 50 tokens a second


def library(program) -> tuple[float, float]:
    """(TTFA, gap from the first chunk to the second) in this process."""
    engine = Engine(program)
    start = time.perf_counter()
    engine.submit(SpeakRequest(TEXT))
    times = []
    for event in engine.events():
        if isinstance(event, AudioChunk):
            times.append(time.perf_counter())
            if len(times) == 2:
                engine.cancel_all()
    return times[0] - start, times[1] - times[0]


def first_byte(port: int, model: str, fmt: str) -> float:
    body = json.dumps({"model": model, "input": TEXT, "response_format": fmt, "stream_format": "audio"}).encode()
    conn = http.client.HTTPConnection("127.0.0.1", port)
    start = time.perf_counter()
    conn.request("POST", "/v1/audio/speech", body, {"Content-Type": "application/json"})
    response = conn.getresponse()
    skip = 44 if fmt == "wav" else 0  # the stream header goes out before any audio
    while True:
        part = response.read1(65536)
        if not part:
            raise RuntimeError(f"{fmt}: the stream ended before its first audio")
        skip -= len(part)
        if skip < 0:
            elapsed = time.perf_counter() - start
            break
    response.read()  # to the end: a request cut off would still hold the engine for its step in flight
    conn.close()
    return elapsed


def websocket(url: str, streamed: bool) -> float:
    """First audio after the text was whole (sent at once), or after its first clause was (sent word by word,
    on another thread, while this one waits for the audio)."""
    import threading

    from websockets.sync.client import connect

    clause_done: list[float] = []

    def send_text(ws) -> None:
        words = STREAMED.split(" ") if streamed else [STREAMED]
        for i, word in enumerate(words):
            ws.send(json.dumps({"type": "input.text", "text": word if i == 0 else " " + word}))
            if not clause_done and (not streamed or words[i - 1].endswith(",")) and (i or not streamed):
                clause_done.append(time.perf_counter())  # a clause ends at its comma and the space after it
            if streamed:
                time.sleep(WORD_GAP_S)
        ws.send(json.dumps({"type": "input.done"}))

    with connect(url) as ws:
        ws.send(json.dumps({"type": "session.config", "response_format": "pcm", "split_granularity": "clause"}))
        sender = threading.Thread(target=send_text, args=(ws,))
        sender.start()
        while not isinstance(ws.recv(), bytes):
            pass
        first = time.perf_counter()
        sender.join()
        for message in ws:  # the rest of the utterance: the socket stays open for another until the client leaves
            if not isinstance(message, bytes) and json.loads(message).get("type") == "session.done":
                break
    return first - clause_done[0]


def start_server(card: str) -> tuple[subprocess.Popen, int]:
    proc = subprocess.Popen([sys.executable, "-m", "omni_cli.cli", "serve", "--card", card, "--port", "0"],
                            stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    found = re.search(r"http://[\d.]+:(\d+)", proc.stderr.readline())
    if not found:
        proc.kill()
        sys.exit("bench_first_byte: the server did not start")
    port = int(found.group(1))
    deadline = time.monotonic() + 30
    while True:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port)
            conn.request("GET", "/health")
            if conn.getresponse().status == 200:
                return proc, port
        except OSError:
            if time.monotonic() > deadline:
                proc.kill()
                sys.exit("bench_first_byte: the server does not answer /health")
            time.sleep(0.05)


def measure(card: str, rounds: int) -> dict[str, list[float]]:
    """Every case's time (ms) in each round after the first (which warms every path up)."""
    program = load(card)
    model = program.card.model if card.endswith(".yaml") else card
    proc, port = start_server(card)
    ws_url = f"ws://127.0.0.1:{port}/v1/audio/speech/stream"
    cases = {**{fmt: (lambda f=fmt: first_byte(port, model, f)) for fmt in formats()},
             "ws_whole": lambda: websocket(ws_url, False), "ws_streamed": lambda: websocket(ws_url, True)}
    times: dict[str, list[float]] = {name: [] for name in ("library", "chunk_gap", *cases)}
    try:
        for round_ in range(rounds + 1):
            ttfa, gap = library(program)
            measured = {"library": ttfa, "chunk_gap": gap, **{name: case() for name, case in cases.items()}}
            if round_:
                for name, value in measured.items():
                    times[name].append(1000 * value)
    finally:
        proc.terminate()
        proc.wait(10)
    return times


def formats() -> tuple[str, ...]:
    from omni_cli.audio.aac import aac_unavailable

    return FORMATS if aac_unavailable() is None else FORMATS[:-1]


def ratio(times: dict[str, list[float]], a: str, b: str) -> float:
    """The median over rounds of a/b, each round's pair measured moments apart."""
    return statistics.median(x / y for x, y in zip(times[a], times[b], strict=True))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--card", default="qwen2_5_omni_toy")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    times = measure(args.card, args.rounds)
    ms = {name: statistics.median(values) for name, values in times.items()}
    if args.json:
        print(json.dumps({"card": args.card, "rounds": args.rounds, "median_ms": ms,
                          "ratio_to_library": {fmt: ratio(times, fmt, "library") for fmt in formats()},
                          "ws_streamed_to_whole": ratio(times, "ws_streamed", "ws_whole")}))
        return
    print(f"{args.card}, {args.rounds} rounds (medians; ratios are medians of each round's own ratio): "
          f"library TTFA {ms['library']:.1f} ms, its next chunk {ms['chunk_gap']:.1f} ms later")
    for fmt in formats():
        late = statistics.median(c - w for c, w in zip(times[fmt], times["wav"], strict=True))
        codec = "" if fmt in ("wav", "pcm") else f"; wav {late:+.1f} ms (goal <= +{ms['chunk_gap']:.1f}: one chunk)"
        print(f"{'http ' + fmt:>17} {ms[fmt]:7.1f} ms  {ratio(times, fmt, 'library'):.2f}x library "
              f"(goal <= 1.50x){codec}")
    print(f"{'ws text whole':>17} {ms['ws_whole']:7.1f} ms  from the text sent")
    print(f"{'ws text streamed':>17} {ms['ws_streamed']:7.1f} ms  from its first clause complete: "
          f"{ratio(times, 'ws_streamed', 'ws_whole'):.2f}x the whole text's (goal <= 1.00x)")


if __name__ == "__main__":
    main()
