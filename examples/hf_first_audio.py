"""Where a lone request's first audio goes on the hf path, and what two exact speed-ups save, side by side.

    python -m omni_cli.backends.hf.tiny ./tiny-omni
    python examples/hf_first_audio.py ./tiny-omni [--requests 8] [--rounds 2] [--codes 200] [--first-audio 4]

Each round runs, for each variant in turn, `--requests` greedy chat utterances of `--codes` codes one after
another (concurrency 1, as `omni bench --reference`'s ours-1 does):

- card: the shipped card (the first chunk's audio in one BigVGAN call, `first_audio_codes: 0`);
- two-piece: the first chunk's audio in two BigVGAN calls, its first `--first-audio` codes first and the
  rest right after (`first_audio_codes: N`), from the same DiT window;
- hf-talker: the shipped card with the talker's decode steps through transformers' forward (the talker's
  `TalkerStep` off).

Per variant and round it prints TTFA, latency and the stall max of a player that starts at first audio,
and what the first audio waited on, read from the trace events (medians over the requests): the thinker's
WorkUnits (prefill and steps), the talker's, and the vocoder's first call, each as a count and
milliseconds; then the talker's milliseconds per decode step over whole utterances.
"""

from __future__ import annotations

import argparse
import statistics
from collections import defaultdict
from dataclasses import replace

EVENTS: list = []


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkpoint")
    parser.add_argument("--requests", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--codes", type=int, default=200)
    parser.add_argument("--first-audio", type=int, default=4, help="two-piece: codes in the first piece")
    args = parser.parse_args()

    from omni_cli.api import load
    from omni_cli.backends.base import AUDIO_CHUNK
    from omni_cli.bench import Workload, greedy_variant, run_workload
    from omni_cli.program import compile_program

    base = load("qwen2_5_omni", settings={"model_path": args.checkpoint})
    card = base.card
    first_audio = card.loop_for_role("vocoder").first_audio_codes
    loops = {name: replace(loop, first_audio_codes=args.first_audio) if loop.kind == "audio_decode" else loop
             for name, loop in card.loops.items()}
    two_piece_card = card.replaced(loops=loops)
    caps = {"thinker": 12, "talker": args.codes + 1}
    shipped = greedy_variant(base, caps, talker_min=args.codes)
    two_piece = greedy_variant(compile_program(two_piece_card, base.program, base.settings), caps, talker_min=args.codes)
    role_of = {name: card.components[loop.component].role for name, loop in card.loops.items()}
    variants = {"card": shipped, "two-piece": two_piece, "hf-talker": shipped}
    if shipped.roles["talker"].step is None:
        print("note: TalkerStep does not apply to this talker; hf-talker is the card")
    print(f"card: first_audio_codes {first_audio}; two-piece: {args.first_audio}; {args.requests} utterances of "
          f"{args.codes} codes, one at a time")
    work = Workload(num_requests=args.requests, text_chars=60, mode="chat")
    run_workload(shipped, replace(work, num_requests=2), on_event=EVENTS.append)  # warm-up
    for round_ in range(1, args.rounds + 1):
        for name, program in variants.items():
            talker = program.roles["talker"]
            lean_step = talker.step
            talker.step = None if name == "hf-talker" else lean_step
            EVENTS.clear()
            try:
                summary = run_workload(program, work, name, on_event=EVENTS.append).summary()
            finally:
                talker.step = lean_step
            per: dict[str, dict] = defaultdict(lambda: {"units": []})
            for event in EVENTS:
                if event.event == "work_unit":
                    per[event.request_id]["units"].append(event)
            before: dict[str, list[tuple[int, float]]] = defaultdict(list)
            talker_steps: list[float] = []
            for seen in per.values():
                counts: dict[str, int] = defaultdict(int)
                sums: dict[str, float] = defaultdict(float)
                reached = False
                for unit in seen["units"]:
                    role = role_of[unit.loop]
                    if role == "talker" and unit.step > 0:
                        talker_steps.append(unit.dur_s)
                    if not reached:
                        counts[role] += 1
                        sums[role] += unit.dur_s
                        reached = unit.kind == AUDIO_CHUNK
                for role in ("thinker", "talker", "vocoder"):
                    before[role].append((counts[role], sums[role]))
            parts = "  ".join(f"{role} {statistics.median(n for n, _ in v):.0f} units "
                              f"{statistics.median(s for _, s in v) * 1e3:5.1f} ms" for role, v in before.items())
            print(f"round {round_}  {name:<9}  TTFA {summary['ttfa_p50_s'] * 1e3:5.0f} ms  latency "
                  f"{summary['latency_p50_s']:.3f} s  stall max {summary['stall_max_s'] * 1e3:3.0f} ms | before first "
                  f"audio: {parts} | talker {statistics.median(talker_steps) * 1e3:.2f} ms/step", flush=True)


if __name__ == "__main__":
    main()
