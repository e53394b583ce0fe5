"""What a placement costs: the hand-off of one call to each executor, beside the component's own time."""

from __future__ import annotations

import os
import pickle
import statistics
import time
from dataclasses import dataclass, replace

from ..backends.base import AR_PREFILL, AR_TOKEN, ARStepInput
from ..build import placement_for, start_executors
from ..engine.executors import close_executors
from ..engine.executors.handles import StateRef
from ..program import CompiledProgram
from .workload import Workload, run_workload


@dataclass
class CallCost:
    """Median figures of `calls` thinker decode calls, one in flight at a time, on one executor kind."""

    kind: str
    calls: int
    call_s: float  # from submit to the result in the driver's hands
    component_s: float  # the component's own time, measured where it ran
    bytes_per_call: int  # what crosses the driver per call, pickled (inputs there, outputs back)

    @property
    def overhead_s(self) -> float:
        return max(self.call_s - self.component_s, 0.0)

    def summary(self) -> dict:
        return {"placement": self.kind, "calls": self.calls, "call_us": self.call_s * 1e6,
                "component_us": self.component_s * 1e6, "overhead_us": self.overhead_s * 1e6,
                "bytes_per_call": self.bytes_per_call}


def placement_suite(program: CompiledProgram, kinds: list[str], *, num_requests: int = 8, short_chars: int = 60,
                    concurrency: int = 8, rounds: int = 1) -> list[dict]:
    """Each placement beside inline, in one run: throughput of the same workload (and whether it made the
    same audio), and what one call costs on that executor beside the component's own time. The timed runs
    alternate placements for `rounds` rounds, each placement's fastest kept (a shared machine's load then
    weighs on each alike); the inline row also gives the bound overlap puts on the ratio (overlap_bound)."""
    order = ["inline", *[k for k in kinds if k != "inline"]]
    workloads = {k: Workload(num_requests=num_requests, text_chars=short_chars, concurrency=concurrency, placement=k)
                 for k in order}
    best, digests = {}, {}
    for _ in range(max(rounds, 1)):
        for kind in order:
            result = run_workload(program, workloads[kind], f"placement-{kind}")
            digests.setdefault(kind, set()).add(tuple(result.digests))
            if kind not in best or result.wall_s < best[kind].wall_s:
                best[kind] = result
    inline = best["inline"]
    rows = []
    for kind in order:
        result, summary = best[kind], best[kind].summary()
        rows.append({**call_cost(program, kind).summary(), **driver_crossing(program, kind, workloads[kind]),
                     "audio_s_per_wall_s": summary["audio_s_per_wall_s"],
                     "vs_inline": result.wall_s and inline.wall_s / result.wall_s,
                     "same_audio": digests[kind] == digests["inline"] and len(digests[kind]) == 1,
                     "wall_s": result.wall_s, "stage_busy_s": dict(result.busy_s),
                     "engine_s": result.overhead_s, "rounds": max(rounds, 1),
                     "concurrency": concurrency, "requests": num_requests})
    rows[0].update(overlap_bound(inline.wall_s, inline.busy_s, inline.overhead_s or 0.0))
    return rows


def overlap_bound(wall_s: float, busy_s: dict[str, float], engine_s: float, cores: int | None = None) -> dict:
    """How far overlapping the stages can speed up an inline run that took `wall_s`: with perfect overlap and
    no hand-off cost the wall time is still at least the busiest stage's (the engine's own time counts as
    one more, on the driver's thread), and at least all the work spread over the cores."""
    cores = cores or os.cpu_count() or 1
    stages = [*busy_s.values(), engine_s]
    per_stage = max(stages, default=0.0)
    on_cores = max(per_stage, sum(stages) / cores)
    return {"overlap_cores": cores,
            "overlap_bound": wall_s / on_cores if on_cores else None,  # on this machine's cores
            "overlap_bound_per_stage": wall_s / per_stage if per_stage else None}  # a core or device per stage


def driver_crossing(program: CompiledProgram, kind: str, workload) -> dict:
    """The bytes that cross the driver per WorkUnit on `kind`, from a metered run of the same workload
    (a run of its own: pickling to count costs time). Inline and thread share the driver's memory: 0.
    On process and ray, a second metered run sends the thinker's states through the driver, as before the
    direct hand-off (executors/handoff.py): `via_driver_*` are its figures."""
    from .crossing import totals

    specs = placed(program, kind)
    if not any(spec.is_remote for spec in specs.values()):
        return totals([])
    direct = _metered(program, specs, workload, kind, direct_handoff=True)
    via = _metered(program, specs, workload, kind, direct_handoff=False)
    return {**direct, "via_driver_bytes_per_unit": via["driver_bytes_per_unit"],
            "via_driver_handoff_bytes_per_unit": via["handoff_bytes_per_unit"]}


def _metered(program: CompiledProgram, specs, workload, kind: str, *, direct_handoff: bool) -> dict:
    from .crossing import metered, totals

    crossings: list = []

    def wrap(started: dict) -> dict:
        executors, made = metered(program, started, {n: s.is_remote for n, s in specs.items()})
        crossings.extend(made)
        return executors

    run_workload(program, workload, f"crossing-{kind}", wrap=wrap, direct_handoff=direct_handoff)
    return totals(crossings)


def placed(program: CompiledProgram, kind: str):
    """Every component of `program` on executor `kind`, the card's devices and resources kept."""
    return placement_for(program, kind)


def call_cost(program: CompiledProgram, kind: str, calls: int = 200) -> CallCost:
    """Time `calls` one-token thinker steps through a `kind` executor (the first, a prefill, is not counted)."""
    executors = start_executors(program, kind)
    try:
        name, thinker = next((n, c) for n, c in program.components.items() if c.role == "thinker")
        executor = executors[name]
        prompt = thinker.encode("the quick brown fox", "echo").prefill_ids
        cache = thinker.new_cache()
        first = executor.submit(AR_PREFILL, [ARStepInput(cache, list(prompt))]).result()
        token = int(first.outputs[0].logits.argmax())
        walls, durs = [], []
        outcome = first
        for _ in range(min(calls, thinker.max_positions - len(prompt) - 2)):
            step = [ARStepInput(cache, [token])]
            start = time.perf_counter()
            outcome = executor.submit(AR_TOKEN, step).result()
            walls.append(time.perf_counter() - start)
            durs.append(outcome.dur_s)
        # in another process a step's state travels as a handle: the KV cache stays there
        sent = pickle.dumps([replace(step[0], cache=StateRef(0))]) if kind in ("process", "ray") else b""
        back = pickle.dumps(outcome.outputs) if kind in ("process", "ray") else b""
    finally:
        close_executors(executors)
    return CallCost(kind, len(walls), statistics.median(walls), statistics.median(durs), len(sent) + len(back))
