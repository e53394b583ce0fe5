"""A conversation's second turn with the earlier turn's encoding kept in the cache, beside one that encodes it again.

    python examples/kept_encodings.py                                    # the toy card
    python -m omni_cli.backends.hf.tiny ./tiny-omni
    python examples/kept_encodings.py --model-path ./tiny-omni [--seconds 20] [--rounds 3]

The first turn heard a SECONDS-long question (and kept its encoding in a fresh store); each round then answers a
new 2 s question after it twice, alternating which goes first: once with the store (the earlier clip's rows read
back), once without (encoded again), each with fresh sources and a fresh engine on the one loaded program, as a
new `omni chat --history` run would. Printed: the audio blocks each encoded, the seconds the audio encoder ran,
the time to first audio, their ratios (kept / again), and whether the two gave the same thinker ids and waveform.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

RATE = 16000


def question(seconds: float, seed: int) -> np.ndarray:
    t = np.arange(int(seconds * RATE)) / RATE
    tone = 0.3 * np.sin(2 * np.pi * (180 + 20 * seed) * t * (1 + 0.05 * np.sin(t)))
    return (tone + 0.01 * np.random.default_rng(seed).standard_normal(t.size)).astype(np.float32)


def answer(program, store, history, clip: np.ndarray) -> dict:
    """One turn: its result, the blocks encoded, the encoder's seconds and the time to first audio."""
    from omni_cli.audio.source import AudioSource
    from omni_cli.engine import Engine
    from omni_cli.spec import SpeakRequest
    from omni_cli.spec.stream import AudioChunk, RequestDone

    encoder = program.roles["audio_encoder"]
    spent, real = [0.0, 0], encoder.run

    def timed(kind, inputs):
        start = time.perf_counter()
        try:
            return real(kind, inputs)
        finally:
            spent[0] += time.perf_counter() - start
            spent[1] += len(inputs)

    encoder.run = timed
    try:
        request = SpeakRequest("and this?", mode="chat", max_tokens=8, history=history(),
                               audio=AudioSource.whole(clip, RATE), keep_encoded=store)
        start, first, tokens, samples = time.perf_counter(), None, None, []
        handle = Engine(program).submit(request, collect=True)
        for event in handle.stream():
            if isinstance(event, AudioChunk):
                first = first or time.perf_counter() - start
                samples.append(event.samples)
            elif isinstance(event, RequestDone):
                tokens = handle.result().tokens
    finally:
        del encoder.run
    return {"blocks": spent[1], "encode_s": spent[0], "ttfa_s": first, "tokens": tokens,
            "samples": np.concatenate(samples)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model-path", help="a Qwen2.5-Omni checkpoint (default: the toy card)")
    parser.add_argument("--seconds", type=float, default=20.0, help="the first turn's question")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    from omni_cli.api import load
    from omni_cli.audio.source import AudioSource
    from omni_cli.encoded import EncodedStore
    from omni_cli.spec import PriorTurn

    program = (load("qwen2_5_omni", "chat", settings={"model_path": args.model_path}) if args.model_path
               else load("qwen2_5_omni_toy", "chat"))
    store = EncodedStore(Path(tempfile.mkdtemp(prefix="kept-encodings-")))
    first = question(args.seconds, 0)
    answer(program, store, lambda: (), first)  # the first turn: its clip kept

    def history():
        return (PriorTurn("user", "", (AudioSource.whole(first, RATE),)), PriorTurn("assistant", "a tone"))

    runs: dict[str, list[dict]] = {"kept": [], "again": []}
    for r in range(args.rounds):
        new = question(2.0, r + 1)  # a new question each round: nothing of it kept yet
        for name in (("kept", "again") if r % 2 == 0 else ("again", "kept")):
            runs[name].append(answer(program, store if name == "kept" else None, history, new))
    same = all(a["tokens"] == b["tokens"] and np.array_equal(a["samples"], b["samples"])
               for a, b in zip(runs["kept"], runs["again"], strict=True))
    print(f"earlier clip {args.seconds:g} s, new clip 2 s, {args.rounds} rounds (medians)")
    print(f"{'':8}{'blocks':>8}{'encoder s':>11}{'first audio s':>15}")
    medians = {}
    for name, rows in runs.items():
        medians[name] = {k: statistics.median(row[k] for row in rows) for k in ("blocks", "encode_s", "ttfa_s")}
        m = medians[name]
        print(f"{name:8}{m['blocks']:>8g}{m['encode_s']:>11.3f}{m['ttfa_s']:>15.3f}")
    ratio = {k: medians["kept"][k] / medians["again"][k] for k in ("encode_s", "ttfa_s")}
    print(f"ratio kept/again: encoder {ratio['encode_s']:.2f}x, first audio {ratio['ttfa_s']:.2f}x; "
          f"same thinker ids and waveform: {same}")


if __name__ == "__main__":
    main()
