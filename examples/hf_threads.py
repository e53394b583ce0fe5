"""Intra-op threads per component, measured: the same workloads with each thread count, alternated in one run.

    python -m omni_cli.backends.hf.tiny ./tiny-omni
    python examples/hf_threads.py ./tiny-omni [--threads 2 1] [--requests 4] [--rounds 2] [--codes 200]

Each round runs, for each count in turn (every component set to it, and `generate` given it too):
`--requests` chat utterances of `--codes` codes through our engine at concurrency 1 and at concurrency
`--requests`, then Hugging Face `generate` on the same requests one after another. It prints one JSON
line per run and, per count, the best and worst over rounds of TTFA p50, latency p50, audio s per wall s
and the slowest vocoder call, with the ratio of each figure to the first count's in the same round.
Alternating the counts inside a round is what keeps the comparison fair on a shared machine, whose load
moves from minute to minute. The default count (backends/hf/threads.py) was chosen from this script.
"""

from __future__ import annotations

import argparse
import json
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkpoint")
    parser.add_argument("--threads", type=int, nargs="+", default=[2, 1])
    parser.add_argument("--requests", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--codes", type=int, default=200)
    args = parser.parse_args()
    if min(args.threads) < 1 or args.requests < 1 or args.rounds < 1:
        parser.error("--threads, --requests and --rounds must be at least 1")

    from omni_cli.api import load
    from omni_cli.backends.hf.reference import GenerateReference
    from omni_cli.backends.hf.threads import Threads
    from omni_cli.bench import Workload, greedy_variant, run_workload

    program = load("qwen2_5_omni", settings={"model_path": args.checkpoint})
    ours = greedy_variant(program, {"thinker": 12, "talker": args.codes + 1}, talker_min=args.codes)
    thinker, talker, vocoder = ours.roles["thinker"], ours.roles["talker"], ours.roles["vocoder"]
    slowest = [0.0]
    run_chunks = vocoder.run

    def timed_run(kind, inputs):  # the slowest vocoder call of a run: what a player waits on
        start = time.perf_counter()
        try:
            return run_chunks(kind, inputs)
        finally:
            slowest[0] = max(slowest[0], time.perf_counter() - start)

    vocoder.run = timed_run
    work = Workload(num_requests=args.requests, text_chars=60, mode="chat")
    loops = ours.card.loop_for_role("thinker").max_tokens, ours.card.loop_for_role("talker").max_tokens
    figures: dict[tuple[int, str], list[dict]] = {}
    for round_ in range(args.rounds):
        for count in args.threads:
            for component in ours.components.values():
                component.threads = Threads(count, "examples/hf_threads.py")
            for label, workload in (("ours-1", work), (f"ours-{args.requests}", Workload(
                    num_requests=args.requests, text_chars=60, mode="chat", concurrency=args.requests))):
                slowest[0] = 0.0
                s = run_workload(ours, workload, label).summary()
                row = {"round": round_, "threads": count, "run": label, "ttfa_p50_s": s["ttfa_p50_s"],
                       "latency_p50_s": s["latency_p50_s"], "audio_s_per_wall_s": s["audio_s_per_wall_s"],
                       "slowest_vocoder_call_s": slowest[0], "stall_max_s": s["stall_max_s"]}
                figures.setdefault((count, label), []).append(row)
                print(json.dumps(row), flush=True)
            reference = GenerateReference(args.checkpoint, sorted(talker.eos_token_ids), model=thinker.model,
                                          num_threads=count)
            runs = [reference.run(thinker.encode(r.text, "chat").prefill_ids, voice=ours.voices()[0], seed=r.seed,
                                  thinker_max=loops[0], talker_max=loops[1], talker_min=args.codes)
                    for r in work.requests()]
            latency = sorted(r.latency_s for r in runs)
            row = {"round": round_, "threads": count, "run": "generate", "latency_p50_s": latency[len(latency) // 2],
                   "audio_s_per_wall_s": sum(r.samples.size / 24000 for r in runs) / sum(latency)}
            figures.setdefault((count, "generate"), []).append(row)
            print(json.dumps(row), flush=True)
    _summarise(figures, args.threads)


def _summarise(figures: dict[tuple[int, str], list[dict]], counts: list[int]) -> None:
    first = counts[0]
    print(f"per thread count: best-worst over rounds; x{first}: the ratio to {first} thread(s) in the same round "
          "(latencies: lower is better, audio/wall: higher)")
    for (count, label), rows in figures.items():
        parts = []
        for key in ("ttfa_p50_s", "latency_p50_s", "audio_s_per_wall_s", "slowest_vocoder_call_s", "stall_max_s"):
            values = [r[key] for r in rows if r.get(key) is not None]
            if not values:
                continue
            base = [r[key] for r in figures[(first, label)] if r.get(key) is not None]
            ratios = [v / b for v, b in zip(values, base, strict=False) if b]
            parts.append(f"{key} {min(values):.3f}-{max(values):.3f}"
                         + (f" (x{first}: {min(ratios):.2f}-{max(ratios):.2f})" if count != first and ratios else ""))
        print(f"  {count} thread(s) {label:<9} " + "; ".join(parts))


if __name__ == "__main__":
    main()
