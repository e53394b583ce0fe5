"""A benchmark workload: N utterances at concurrency C through one engine, and what one run measured."""

from __future__ import annotations

import hashlib
import resource
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from ..backends.base import AUDIO_CHUNK
from ..build import engine_on, runs_inline
from ..engine import Engine
from ..engine.request import RequestHandle, RequestResult
from ..program import CompiledProgram
from ..spec import SpeakRequest
from ..spec.stream import AudioChunk, RequestDone, RequestStatus

_WORDS = ("the quick brown fox jumps over a lazy dog while seven bright stars watch quietly from far "
          "above and every small voice in the valley sings along with the river").split()


def make_text(num_chars: int, index: int = 0) -> str:
    """A deterministic sentence of about `num_chars` characters (different for each index)."""
    words, n, i = [], 0, index * 7
    while n < num_chars:
        word = _WORDS[i % len(_WORDS)]
        words.append(word)
        n += len(word) + 1
        i += 1
    return " ".join(words)[:num_chars].rstrip() or "hello"


@dataclass(frozen=True)
class Workload:
    num_requests: int = 8
    text_chars: int = 60
    concurrency: int = 1
    handoff: str = "stream"  # stream | barrier
    policy: str = "latency-first"
    mode: str = "echo"
    max_batch: int | None = None
    # where the components run: "card" (the card's placement, inline where it names none, as `omni speak`
    # runs them), or `--placement`'s KIND (every component there) or NAME=KIND,... (over the card's)
    placement: str = "card"
    profile: str = "serve"  # serve | rollout (records every WorkUnit's behaviour)

    def requests(self) -> list[SpeakRequest]:
        return [SpeakRequest(make_text(self.text_chars, i), mode=self.mode, seed=i, handoff=self.handoff,
                             request_id=f"b{i}", profile=self.profile) for i in range(self.num_requests)]


@dataclass
class BenchResult:
    label: str
    workload: Workload
    wall_s: float
    ttfa_s: list[float]
    latency_s: list[float]
    audio_s: list[float]
    work_units: int = 0
    overhead_per_unit_s: float | None = None
    peak_reserved_bytes: int | None = None
    max_rss_bytes: int = 0
    digests: list[str] = field(default_factory=list)  # per request: a hash of its samples, to compare outputs
    outputs: list[RequestResult] = field(default_factory=list)  # per request, with run_workload(keep_outputs=True)
    stall_s: list[float] = field(default_factory=list)  # per request: see PlaybackClock
    overhead_s: float | None = None  # the engine's own time (not in or waiting on components), in all
    critical_s: list[float] = field(default_factory=list)  # per request: see FirstChunkPath
    busy_s: dict[str, float] = field(default_factory=dict)  # per loop: seconds its component's calls ran

    def summary(self) -> dict[str, Any]:
        audio_total = sum(self.audio_s)
        return {
            "label": self.label, **{f"workload_{k}": v for k, v in asdict(self.workload).items()},
            "ttfa_p50_s": _quantile(self.ttfa_s, 0.5), "ttfa_p95_s": _quantile(self.ttfa_s, 0.95),
            "latency_p50_s": _quantile(self.latency_s, 0.5), "latency_p95_s": _quantile(self.latency_s, 0.95),
            "stall_max_s": max(self.stall_s) if self.stall_s else None,
            "rtf_p50": _quantile([lat / a for lat, a in zip(self.latency_s, self.audio_s, strict=True) if a > 0], 0.5),
            "audio_s_per_wall_s": audio_total / self.wall_s if self.wall_s else None,
            "work_units_per_s": self.work_units / self.wall_s if self.wall_s and self.work_units else None,
            "overhead_us_per_unit": None if self.overhead_per_unit_s is None else self.overhead_per_unit_s * 1e6,
            # the engine's own time as a share of the wall time per WorkUnit (= of the whole run's wall time)
            "overhead_share": None if self.overhead_s is None or not self.wall_s else self.overhead_s / self.wall_s,
            "critical_p50_s": _quantile(self.critical_s, 0.5),
            "ttfa_over_critical_p50": _quantile([t / c for t, c in zip(self.ttfa_s, self.critical_s, strict=False) if c > 0]
                                                if len(self.ttfa_s) == len(self.critical_s) else [], 0.5),
            "peak_reserved_mib": None if self.peak_reserved_bytes is None else self.peak_reserved_bytes / 2**20,
            "max_rss_mib": self.max_rss_bytes / 2**20,
            "audio_s_total": audio_total, "wall_s": self.wall_s,
        }


def _quantile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[max(0, min(98, round(q * 100) - 1))]


def max_rss_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux reports KiB


class PlaybackClock:
    """A player that starts at a request's first audio and plays in real time: `stall_s` is the
    longest it waited for a chunk after the audio before it had run out (0: no gap)."""

    def __init__(self) -> None:
        self.played_until: float | None = None
        self.stall_s = 0.0

    def chunk(self, now: float, duration_s: float) -> None:
        if self.played_until is None:
            self.played_until = now
        self.stall_s = max(self.stall_s, now - self.played_until)
        self.played_until = max(self.played_until, now) + duration_s


class FirstChunkPath:
    """Per request, the component time of its own WorkUnits up to and including its first audio chunk:
    the thinker prefill and steps, the talker steps and the first vocoder chunk that first audio waits
    on. (A thinker step that ran ahead in the same tick counts too: on one thread it delays the first
    chunk just the same.) TTFA / this is how close first audio comes to its physical limit."""

    def __init__(self) -> None:
        self.path_s: dict[str, float] = {}
        self._done: set[str] = set()

    def on_event(self, event: Any) -> None:
        rid = event.request_id
        if event.event != "work_unit" or rid in self._done:
            return
        self.path_s[rid] = self.path_s.get(rid, 0.0) + event.dur_s
        if event.kind == AUDIO_CHUNK:
            self._done.add(rid)


class RunTrace(FirstChunkPath):
    """FirstChunkPath, and per loop the seconds its component's calls ran (a batched call once, not once per
    WorkUnit: with stages overlapped the wall time is at least the busiest stage's), from one subscriber:
    subscribers run on the engine's thread, and a second call per WorkUnit would count in TTFA too."""

    def __init__(self) -> None:
        super().__init__()
        self.busy_s: dict[str, float] = {}

    def on_event(self, event: Any) -> None:
        if event.event != "work_unit":
            return
        self.busy_s[event.loop] = self.busy_s.get(event.loop, 0.0) + event.dur_s / event.batch_size
        super().on_event(event)


def run_workload(program: CompiledProgram, workload: Workload, label: str = "omni",
                 keep_outputs: bool = False, wrap: Callable[[dict], dict] | None = None,
                 on_event: Callable[[Any], None] | None = None, warm_up: bool = False,
                 direct_handoff: bool = True) -> BenchResult:
    """Keep `concurrency` requests in the engine until all are done; time each from its submission.
    keep_outputs: also return each request's tokens and waveform (to compare with a reference).
    wrap: the started executors, handed back as the engine should use them (bench/crossing.py's meters);
    direct_handoff: False sends the thinker's states to the talker through the driver (executors/handoff.py).
    on_event: also given each of the run's trace events (the engine's `subscribe`), for a study of one run.
    warm_up: first make the workload's first utterance, untimed and uncounted, on the same engine and
    executors (a worker process or Ray actor started for this run sets its shapes up then, as the engine's own
    process does)."""
    engine = engine_on(program, _placement(workload), policy=workload.policy, max_batch=workload.max_batch,
                       direct_handoff=direct_handoff, wrap=wrap)
    try:
        if warm_up:
            _warm_up(engine, workload)
        if on_event is not None:
            engine.subscribe(on_event)
        return _drive(engine, program, workload, label, keep_outputs)
    finally:
        engine.close()  # its workers, processes or actors


def starts_executors(program: CompiledProgram, workload: Workload) -> bool:
    """Whether `run_workload` starts executors of its own for `workload` (threads, worker processes or Ray
    actors that begin cold and end with the run), rather than running every component inline."""
    return not runs_inline(program, _placement(workload))


def _placement(workload: Workload) -> str | None:
    return None if workload.placement == "card" else workload.placement


def _warm_up(engine: Engine, workload: Workload) -> None:
    """The workload's first utterance to its end, nothing of it kept or counted."""
    ended = engine.submit(replace(workload.requests()[0], request_id="warm-up")).result()  # its events read
    if ended.status is not RequestStatus.FINISHED:
        raise RuntimeError(f"bench warm-up {ended.status.value}: {ended.error}")
    engine.reset_stats()


def _drive(engine: Engine, program: CompiledProgram, workload: Workload, label: str, keep_outputs: bool) -> BenchResult:
    trace = RunTrace()
    engine.subscribe(trace.on_event)  # as `omni speak`'s view does: the trace events are part of the cost
    pending = workload.requests()
    # made before the clock starts: a sha256 costs ~20 us cold (OpenSSL's digest lookup), inside TTFA if made at submit
    hashes: dict[str, Any] = {r.request_id: hashlib.sha256() for r in pending}
    clocks: dict[str, PlaybackClock] = {r.request_id: PlaybackClock() for r in pending}
    handles: dict[str, RequestHandle] = {}
    done: dict[str, RequestDone] = {}
    start = time.perf_counter()
    while pending or not engine.is_idle:
        while pending and engine.num_active < workload.concurrency:
            request = pending.pop(0)
            handles[request.request_id] = engine.submit(request, collect=keep_outputs)
        engine.step()
        for event in engine.poll():
            if isinstance(event, AudioChunk):
                hashes[event.request_id].update(event.samples.tobytes())
                clocks[event.request_id].chunk(time.perf_counter(), event.duration_s)
            elif isinstance(event, RequestDone):
                done[event.request_id] = event
    wall = time.perf_counter() - start
    failed = [e for e in done.values() if e.status is not RequestStatus.FINISHED]
    if failed:
        raise RuntimeError(f"bench request {failed[0].request_id} {failed[0].status.value}: {failed[0].error}")
    order = [r.request_id for r in workload.requests()]
    metrics = [done[rid].metrics for rid in order]
    return BenchResult(
        label, workload, wall,
        ttfa_s=[m["ttfa_s"] for m in metrics if m["ttfa_s"] is not None],
        latency_s=[m["latency_s"] for m in metrics], audio_s=[m["audio_s"] for m in metrics],
        work_units=engine.stats.work_units, overhead_per_unit_s=engine.stats.overhead_per_unit_s,
        peak_reserved_bytes=engine.budget.peak_reserved, max_rss_bytes=max_rss_bytes(),
        digests=[hashes[rid].hexdigest() for rid in order],
        outputs=[handles[rid].result() for rid in order] if keep_outputs else [],
        stall_s=[clocks[rid].stall_s for rid in order],
        overhead_s=engine.stats.overhead_s, critical_s=[trace.path_s.get(rid, 0.0) for rid in order],
        busy_s=trace.busy_s,
    )
