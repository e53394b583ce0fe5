"""What the thinker -> talker hand-off worker to worker costs in time, against the same run through the driver.

    python examples/handoff_wall.py                                           # toy card, process and ray
    python examples/handoff_wall.py --card qwen2_5_omni --model-path DIR --kinds process,ray --rounds 3

Every component placed on each kind in turn, the same workload (8 utterances at concurrency 8) run with
the hand-off through the driver and worker to worker (engine/executors/handoff.py), alternated for
`--rounds` rounds; prints each one's fastest wall time and whether both made the same audio. The bytes each
way are what `omni bench --placement` prints.
"""

from __future__ import annotations

import argparse

from omni_cli.api import load
from omni_cli.bench.placement import placed
from omni_cli.bench.workload import Workload, run_workload
from omni_cli.engine.executors import make_executors


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--card", default="qwen2_5_omni_toy")
    parser.add_argument("--model-path", default=None)
    parser.add_argument("--kinds", default="process,ray")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--requests", type=int, default=8)
    parser.add_argument("--chars", type=int, default=40)
    args = parser.parse_args()
    program = load(args.card, None, {"model_path": args.model_path} if args.model_path else None)
    kinds = [k.strip() for k in args.kinds.split(",") if k.strip()]
    best: dict[tuple[str, bool], float] = {}
    digests: dict[tuple[str, bool], set] = {}
    for _ in range(args.rounds):
        for kind in kinds:
            for direct in (False, True):
                workload = Workload(num_requests=args.requests, text_chars=args.chars, concurrency=8, placement=kind)
                executors = make_executors(program, placed(program, kind), direct_handoff=direct)
                result = run_workload(program, workload, f"{kind}-{'direct' if direct else 'driver'}", executors=executors)
                best[kind, direct] = min(best.get((kind, direct), float("inf")), result.wall_s)
                digests.setdefault((kind, direct), set()).add(tuple(result.digests))
    print(f"{args.card}: {args.requests} utterances at concurrency 8, fastest of {args.rounds} alternated rounds")
    for kind in kinds:
        via, direct = best[kind, False], best[kind, True]
        same = digests[kind, False] == digests[kind, True] and len(digests[kind, True]) == 1
        print(f"  {kind:<8} through the driver {via:.3f} s, worker to worker {direct:.3f} s "
              f"({via / direct:.2f}x), same audio: {'yes' if same else 'no'}")


if __name__ == "__main__":
    main()
