"""The qwen3_omni card against Qwen3-Omni's `generate`, side by side, and where a talker frame's time goes.

    python -m omni_cli.backends.hf.qwen3_tiny ./tiny-qwen3
    python examples/hf_qwen3.py ./tiny-qwen3 [--rounds 3] [--requests 4]

1. A talker frame's WorkUnit: the code predictor's share of it (its num_code_groups - 1 steps) alone and in a
   batch of 8, beside the engine's own time per WorkUnit (what each predictor step would add as a WorkUnit of a
   loop of its own).
2. Greedy chat utterances one after another (concurrency 1), ours and generate alternated per round: first
   audio and latency (generate's first audio is its whole call).
3. Eight utterances: audio seconds per wall second, ours at concurrency 8 against generate one after another.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import torch
import yaml

from omni_cli.api import load
from omni_cli.backends.base import AR_PREFILL, AR_TOKEN, ARStepInput
from omni_cli.backends.hf.qwen3_reference import generate_reference
from omni_cli.engine import Engine
from omni_cli.engine.trace import RequestEvent
from omni_cli.spec.request import SpeakRequest

TEXTS = ["hello there", "what is new today?", "tell me a story", "ok, and then?"]
ROOT = Path(__file__).resolve().parents[1]


def greedy_program(model_path: str, talker_max: int):
    card = yaml.safe_load((ROOT / "cards" / "qwen3_omni.yaml").read_text())
    card["loops"]["thinker_decode"]["max_tokens"] = 12
    card["loops"]["talker_decode"].update(max_tokens=talker_max, sampling={"temperature": 0.0, "repetition_penalty": 1.05})
    path = Path("/tmp") / f"qwen3_omni_greedy_{talker_max}.yaml"
    path.write_text(yaml.safe_dump(card))
    return load(str(path), settings={"model_path": model_path})


def frame_split(program, batch: int, steps: int = 20) -> tuple[float, float]:
    """(ms per frame WorkUnit, ms of it in the code predictor) at `batch` requests per call."""
    thinker, talker = program.components["thinker"], program.components["talker"]
    from omni_cli.backends.base import ARItem

    caches = []
    for i in range(batch):
        ids = thinker.encode(TEXTS[i % len(TEXTS)], "chat").prefill_ids
        items = [ARItem(0, ids, 11), ARItem(1, [11], 12)]
        prefill = talker.prefill_from(items, False, None)
        cache = talker.new_cache()
        talker.run(AR_PREFILL, [ARStepInput(cache, prefill.token_ids, prefill=prefill.payload)])
        caches.append(cache)
    cond = talker._tts_pad
    residuals = talker._residuals
    spent = [0.0]

    def timed(*args):
        start = time.perf_counter()
        out = residuals(*args)
        spent[0] += time.perf_counter() - start
        return out

    talker._residuals = timed
    start = time.perf_counter()
    for _ in range(steps):
        talker.run(AR_TOKEN, [ARStepInput(c, [3], cond=cond) for c in caches])
    total = time.perf_counter() - start
    del talker._residuals
    return 1e3 * total / steps, 1e3 * spent[0] / steps


def ours(program, text: str) -> tuple[float, float]:
    """(first audio, latency) of one request alone, from the engine's request events."""
    engine, times = Engine(program), {}
    engine.subscribe(lambda e: times.setdefault(e.phase, e.t_s) if isinstance(e, RequestEvent) else None)
    engine.submit(SpeakRequest(text, mode="chat", voice="Chelsie"), collect=True).result()
    return times["first_audio"] - times["submitted"], times["finished"] - times["submitted"]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("model_path")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--requests", type=int, default=4)
    parser.add_argument("--talker-max", type=int, default=40)
    args = parser.parse_args()
    torch.set_num_threads(1)
    program = greedy_program(args.model_path, args.talker_max)
    for batch in (1, 8):
        frame_split(program, batch, 3)  # warm-up
        total, predictor = frame_split(program, batch)
        print(f"talker frame WorkUnit, batch {batch}: {total:.2f} ms, code predictor {predictor:.2f} ms "
              f"({100 * predictor / total:.0f}%)")
    engine = Engine(program)
    engine.submit(SpeakRequest("hello", mode="chat"), collect=True).result()
    print(f"engine time per WorkUnit outside the components: {engine.stats.overhead_per_unit_s * 1e3:.2f} ms")

    thinker = program.components["thinker"]
    eos = min(thinker.eos_token_ids)
    rows = {"ours": [], "generate": []}
    for _ in range(args.rounds):
        for text in TEXTS[:args.requests]:
            ttfa, latency = ours(program, text)
            rows["ours"].append((ttfa, latency))
            ref = generate_reference(thinker.model, thinker.encode(text, "chat").prefill_ids, voice="Chelsie",
                                     thinker_max=12, talker_max=args.talker_max, thinker_eos=eos)
            rows["generate"].append((ref.latency_s, ref.latency_s))
    med = {k: (statistics.median(r[0] for r in v), statistics.median(r[1] for r in v)) for k, v in rows.items()}
    for k, (ttfa, latency) in med.items():
        print(f"{k:9s} first audio {1e3 * ttfa:7.1f} ms  latency {1e3 * latency:7.1f} ms")
    print(f"first audio {med['generate'][0] / med['ours'][0]:.1f}x earlier than generate (goal >= 10x); "
          f"latency {med['ours'][1] / med['generate'][1]:.2f}x generate's (goal <= 1.0x)")
    texts = [TEXTS[i % len(TEXTS)] + "!" * (i // len(TEXTS)) for i in range(8)]
    rates = {"ours-8": [], "generate": []}
    for _ in range(args.rounds):
        rates["ours-8"].append(concurrent(program, texts))
        start, audio = time.perf_counter(), 0.0
        for text in texts:
            ref = generate_reference(thinker.model, thinker.encode(text, "chat").prefill_ids, voice="Chelsie",
                                     thinker_max=12, talker_max=args.talker_max, thinker_eos=eos)
            audio += ref.samples.size / 24000
        rates["generate"].append(audio / (time.perf_counter() - start))
    ours8, theirs = statistics.median(rates["ours-8"]), statistics.median(rates["generate"])
    print(f"audio s per wall s, 8 requests: ours at concurrency 8 {ours8:.4f}, generate one after another "
          f"{theirs:.4f}: {ours8 / theirs:.1f}x (goal >= 3x)")
    return 0


def concurrent(program, texts: list[str]) -> float:
    """Audio seconds per wall second of `texts` submitted to one engine at once."""
    engine = Engine(program)
    start = time.perf_counter()
    handles = [engine.submit(SpeakRequest(t, mode="chat", voice="Chelsie", request_id=f"c{i}"), collect=True)
               for i, t in enumerate(texts)]
    for _ in engine.events():
        pass
    audio = sum(h.result().samples.size for h in handles) / 24000
    return audio / (time.perf_counter() - start)


if __name__ == "__main__":
    raise SystemExit(main())
