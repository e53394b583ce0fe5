"""What lies between the end of a spoken question and the first audio of its answer, WorkUnit by WorkUnit.

    python -m omni_cli.backends.hf.tiny ./tiny-omni
    OMP_NUM_THREADS=1 python examples/hf_listen_profile.py ./tiny-omni [--seconds 10] [--rounds 3]

The question is pushed at real time, as in hf_listen_first_audio.py; from the WorkUnits folded in after its last
sample, the milestones on the path to the first audio (ms after that sample): the last audio block encoded, the
rest of the turn prefilled, the first thinker token, the talker's prefill and first token, its last token before
the first vocoder chunk, and that chunk. Medians over the rounds.
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


MILESTONES = [  # (label, loop, kind, which): when the first or last such WorkUnit was folded in
    ("last audio block encoded", "audio_encode", "audio_block", max),
    ("rest of the turn prefilled", "thinker_decode", "ar_prefill", max),
    ("first thinker token", "thinker_decode", "ar_token", min),
    ("talker prefilled", "talker_decode", "ar_prefill", max),
    ("first talker token", "talker_decode", "ar_token", min),
    ("last talker token before audio", "talker_decode", "ar_token", max),
    ("first vocoder chunk made", "vocoder", "audio_chunk", min),
]


def milestones(rows) -> dict[str, float]:
    """ms after the end of the audio at which each milestone was reached (folded), from one round's units."""
    out = {}
    for label, loop, kind, which in MILESTONES:
        ends = [start + dur for lane, k, start, dur in rows if lane == loop and k == kind]
        if ends:
            out[label] = which(ends) * 1000
    return out


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
    firsts, marks, counts = [], defaultdict(list), defaultdict(list)
    for _ in range(args.rounds):
        first, rows = one_round(program, question(args.seconds), args.max_tokens)
        firsts.append(first * 1000)
        for label, ms in milestones(rows).items():
            marks[label].append(ms)
        for loop, kind in {(lane, k) for lane, k, _, _ in rows}:
            counts[f"{loop} {kind}"].append(sum(1 for lane, k, _, _ in rows if (lane, k) == (loop, kind)))
    print(f"{args.seconds:g} s question, {args.rounds} rounds (medians, ms after the question's last sample):")
    for label, _, _, _ in MILESTONES:
        if marks[label]:
            print(f"  {label:<32} {statistics.median(marks[label]):>8.1f}")
    print(f"  {'first reply audio':<32} {statistics.median(firsts):>8.1f}")
    print("  WorkUnits after the end: " + ", ".join(f"{k} {statistics.median(v):g}" for k, v in sorted(counts.items())))


if __name__ == "__main__":
    main()
