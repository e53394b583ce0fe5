"""What the rollout profile costs: engine overhead per WorkUnit with and without recording, side by side."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..program import CompiledProgram
from .workload import Workload, run_workload


def recording_cost(program: CompiledProgram, *, num_requests: int = 8, short_chars: int = 60,
                   concurrency: int = 8, repeats: int = 3) -> list[dict[str, Any]]:
    """Per concurrency (1 and `concurrency`): the best of `repeats` alternated serve and rollout runs of one
    workload, as overhead µs per WorkUnit (engine time outside components: recording happens there).

    Alternating and keeping each side's best is what makes a few µs visible on a shared machine, where
    one run's overhead moves by tens of µs. The outputs of both profiles are checked to be the same.
    """
    rows = []
    for level in sorted({1, concurrency}):
        served = Workload(num_requests=num_requests, text_chars=short_chars, concurrency=level)
        rolled = replace(served, profile="rollout")
        best: dict[str, float] = {}
        digests: dict[str, list[str]] = {}
        units = 0
        for _ in range(repeats):
            for label, workload in (("serve", served), ("rollout", rolled)):
                result = run_workload(program, workload, f"{label}-{level}")
                best[label] = min(best.get(label, float("inf")), result.overhead_per_unit_s * 1e6)
                digests[label] = result.digests
                units = result.work_units
        if digests["serve"] != digests["rollout"]:
            raise RuntimeError(f"rollout changed the audio at concurrency {level}: it must only record")
        rows.append({"concurrency": level, "work_units": units, "serve_us_per_unit": best["serve"],
                     "rollout_us_per_unit": best["rollout"], "recording_us_per_unit": best["rollout"] - best["serve"]})
    return rows
