"""What lies between the end of a spoken question and the first audio of its answer, WorkUnit by WorkUnit.

    python -m omni_cli.backends.hf.tiny ./tiny-omni
    OMP_NUM_THREADS=1 python examples/hf_listen_profile.py ./tiny-omni [--seconds 10] [--rounds 3]

The question is pushed at real time, as in hf_listen_first_audio.py; every WorkUnit that ends after its last
sample is listed with its start and duration (ms after the end of the audio), grouped as the path to the first
audio: the last audio block, the prefill of the rest of the turn, the thinker tokens before the talker starts,
the talker tokens before the first vocoder chunk, the vocoder's first chunk. Medians over the rounds.
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time
from collections import defaultdict

from hf_listen_first_audio import PIECE_S, RATE, question


def one_round(program, clip, max_tokens: int) -> tuple[float, list[tuple[str, str, float, float]]]:
    from omni_cli.audio.source import AudioSource
    from omni_cli.engine import Engine
    from omni_cli.spec import SpeakRequest
    from omni_cli.spec.stream import AudioChunk

    engine, source, ended = Engine(program), AudioSource(RATE), {}
    units: list = []
    engine.subscribe(lambda e: units.append((e, time.perf_counter())) if e.event == "work_unit" else None)
    step = int(PIECE_S * RATE)

    def speak() -> None:
        start = time.perf_counter()
        for i in range(0, len(clip), step):
            source.push(clip[i:i + step])
            time.sleep(max(0.0, start + (i + step) / RATE - time.perf_counter()))
        ended["at"] = time.perf_counter()
        source.end()

    handle = engine.submit(SpeakRequest("", mode="chat", max_tokens=max_tokens, audio=source))
    threading.Thread(target=speak, daemon=True).start()
    first = None
    for event in handle.stream():
        if isinstance(event, AudioChunk) and event.num_samples:
            first = time.perf_counter()
            handle.cancel()
            break
    for _ in handle.stream():
        pass
    end = ended["at"]
    rows = []
    for e, seen_at in units:  # the event is traced when the unit's result is folded in: it ended by `seen_at`
        if seen_at >= end and seen_at <= first + 1e-3:
            rows.append((e.loop, e.kind, seen_at - e.dur_s - end, e.dur_s))
    return first - end, rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkpoint")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--max-tokens", type=int, default=8)
    args = parser.parse_args()

    from omni_cli.api import load

    program = load("qwen2_5_omni", "chat", settings={"model_path": args.checkpoint})
    one_round(program, question(1.0), args.max_tokens)  # warm-up
    firsts, spans = [], defaultdict(list)
    for _ in range(args.rounds):
        first, rows = one_round(program, question(args.seconds), args.max_tokens)
        firsts.append(first)
        per = defaultdict(lambda: [0, 0.0, None])
        for loop, kind, start, dur in rows:
            entry = per[(loop, kind)]
            entry[0] += 1
            entry[1] += dur
            entry[2] = start if entry[2] is None else min(entry[2], start)
        for key, (count, total, start) in per.items():
            spans[key].append((count, total, start))
        print("round:", ", ".join(f"{loop}/{kind} x{n} {t * 1000:.1f} ms from {s * 1000:.1f}"
                                  for (loop, kind), (n, t, s) in sorted(per.items(), key=lambda kv: kv[1][2])))
    print(f"end of audio -> first reply audio: median {statistics.median(firsts) * 1000:.1f} ms "
          f"({', '.join(f'{f * 1000:.0f}' for f in firsts)})")
    for (loop, kind), values in sorted(spans.items(), key=lambda kv: statistics.median(v[2] for v in kv[1])):
        print(f"  {loop:>15} {kind:<12} x{statistics.median(v[0] for v in values):>4.0f}  "
              f"{statistics.median(v[1] for v in values) * 1000:>7.1f} ms busy, "
              f"first starts {statistics.median(v[2] for v in values) * 1000:>6.1f} ms after the end")


if __name__ == "__main__":
    main()
