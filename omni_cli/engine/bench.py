"""Benchmark workloads: N utterances at concurrency C through one engine, measured side by side."""

from __future__ import annotations

import hashlib
import resource
import statistics
import time
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from ..program import CompiledProgram
from ..spec import SpeakRequest
from ..spec.stream import AudioChunk, RequestDone, RequestStatus
from .engine import Engine
from .request import RequestHandle, RequestResult

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

    def requests(self) -> list[SpeakRequest]:
        return [SpeakRequest(make_text(self.text_chars, i), mode=self.mode, seed=i, handoff=self.handoff,
                             request_id=f"b{i}") for i in range(self.num_requests)]


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


def run_workload(program: CompiledProgram, workload: Workload, label: str = "omni",
                 keep_outputs: bool = False) -> BenchResult:
    """Keep `concurrency` requests in the engine until all are done; time each from its submission.
    keep_outputs: also return each request's tokens and waveform (to compare with a reference)."""
    engine = Engine(program, policy=workload.policy, max_batch=workload.max_batch)
    pending = workload.requests()
    hashes: dict[str, Any] = {}
    handles: dict[str, RequestHandle] = {}
    clocks: dict[str, PlaybackClock] = {}
    done: dict[str, RequestDone] = {}
    start = time.perf_counter()
    while pending or not engine.is_idle:
        while pending and engine.num_active < workload.concurrency:
            request = pending.pop(0)
            handles[request.request_id] = engine.submit(request, collect=keep_outputs)
            hashes[request.request_id] = hashlib.sha256()
            clocks[request.request_id] = PlaybackClock()
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
    )


def standard_suite(program: CompiledProgram, *, num_requests: int = 8, short_chars: int = 60,
                   concurrency: int = 8) -> list[BenchResult]:
    """The configurations the README reports: length scaling, barrier vs stream, concurrency.

    60 characters make about 200 codec tokens on the toy card, the utterance issue 5 compares on.
    """
    base = Workload(num_requests=num_requests, text_chars=short_chars, concurrency=1)
    runs = [
        ("stream", base),
        ("stream-10x", replace(base, text_chars=10 * short_chars)),
        ("barrier", replace(base, handoff="barrier")),
        ("concurrency-1", replace(base, num_requests=num_requests)),
        (f"concurrency-{concurrency}", replace(base, num_requests=num_requests, concurrency=concurrency)),
    ]
    return [run_workload(program, w, label) for label, w in runs]


def process_timings(card: str, repeats: int = 3) -> dict[str, float]:
    """Best-of-`repeats` wall seconds of `omni --help` and of `omni speak` (start to file closed)."""
    import os
    import subprocess
    import sys
    import tempfile

    def best(argv: list[str]) -> float:
        times = []
        for _ in range(repeats):
            t = time.perf_counter()
            subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            times.append(time.perf_counter() - t)
        return min(times)

    omni = [sys.executable, "-m", "omni_cli.cli"]
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "bench.wav")
        return {
            "help_s": best(omni + ["--help"]),
            "speak_s": best(omni + ["speak", "--card", card, "-q", "--force", "-o", out,
                                    "The quick brown fox jumps over the lazy dog."]),
        }


def greedy_variant(program: CompiledProgram, max_tokens: dict[str, int], talker_min: int = 0) -> CompiledProgram:
    """The same card with greedy AR loops (repetition penalty kept) and transformers 5.24's talker prefill:
    what `generate(talker_do_sample=False)` computes, so both sides make the same tokens.
    `max_tokens` caps loops by role (e.g. {"talker": 200}: a random tiny talker may never say EOS)."""
    from ..program import compile_program

    card = program.card
    role_of = {name: card.components[loop.component].role for name, loop in card.loops.items()}
    loops = {name: replace(loop, sampling=replace(loop.sampling, temperature=0.0),
                           max_tokens=min(loop.max_tokens, max_tokens.get(role_of[name], loop.max_tokens)))
             for name, loop in card.loops.items()}
    components = {name: replace(comp, params={**comp.params, "min_new_tokens": talker_min}) if comp.role == "talker"
                  else comp for name, comp in card.components.items()}
    variant = replace(card, loops=loops, components=components, params={**card.params, "match_hf_generate_5_24": True})
    variant.source, variant.located = card.source, card.located
    return compile_program(variant, program.program, program.settings)


def reference_suite(program: CompiledProgram, *, num_requests: int = 4, short_chars: int = 50,
                    concurrency: int = 8, thinker_max: int = 12,
                    talker_codes: int = 200) -> tuple[list[BenchResult], dict[str, Any]]:
    """Ours (chat mode, greedy, streaming) beside Hugging Face `generate` run one request after another.

    Returns the three results ("ours-1", f"ours-{concurrency}", "generate") and how the outputs compare.
    Both sides make `talker_codes` codes per utterance (EOS suppressed before, the bound after): a random
    tiny talker would otherwise stop at whatever length its weights happen to give.
    """
    import numpy as np

    from ..backends.hf.reference import GenerateReference

    ours = greedy_variant(program, {"thinker": thinker_max, "talker": talker_codes + 1}, talker_min=talker_codes)
    work = Workload(num_requests=num_requests, text_chars=short_chars, concurrency=1, mode="chat")
    results = [run_workload(ours, work, "ours-1", keep_outputs=True),
               run_workload(ours, replace(work, concurrency=concurrency), f"ours-{concurrency}", keep_outputs=True)]
    thinker, talker = ours.roles["thinker"], ours.roles["talker"]
    card = ours.card
    thinker_max, talker_max = card.loop_for_role("thinker").max_tokens, card.loop_for_role("talker").max_tokens
    reference = GenerateReference(ours.settings.get("model_path") or card.params["model_path"], sorted(talker.eos_token_ids))
    voice = ours.voices()[0]
    runs = [reference.run(thinker.encode(request.text, "chat").prefill_ids, voice=voice, seed=request.seed,
                          thinker_max=thinker_max, talker_max=talker_max, talker_min=talker_codes)
            for request in work.requests()]
    compared: dict[str, Any] = {"requests": len(runs)}
    for result in results:  # every ours run, the concurrent one (batched decode steps) included
        same, snr = 0, []
        for ref, mine in zip(runs, result.outputs, strict=True):
            tokens = list(mine.tokens.values())
            same += tokens[0] == ref.thinker_tokens and tokens[1] == ref.talker_tokens
            n = min(ref.samples.size, mine.samples.size)
            noise = float(np.sum((ref.samples[:n] - mine.samples[:n]) ** 2))
            snr.append(float("inf") if noise == 0 else 10 * np.log10(float(np.sum(ref.samples[:n] ** 2)) / noise))
        compared[result.label] = {"same_tokens": same, "min_snr_db": min(snr) if snr else None}
        result.outputs = []  # compared; do not keep the waveforms around
    wall = sum(r.latency_s for r in runs)
    results.append(BenchResult("generate", work, wall, ttfa_s=[r.latency_s for r in runs],
                               latency_s=[r.latency_s for r in runs], audio_s=[r.samples.size / 24000 for r in runs],
                               max_rss_bytes=max_rss_bytes()))
    return results, compared


def _by_label(results: list[BenchResult]) -> dict[str, dict[str, Any]]:
    return {r.label: r.summary() for r in results}


def targets(results: list[BenchResult], reference: tuple[list[BenchResult], dict[str, Any]] | None,
            timings: dict[str, float]) -> list[dict[str, Any]]:
    """Each target of issue 5 as (what, measured, goal, met), computed from this run's figures."""
    s = _by_label(results)
    rows: list[dict[str, Any]] = []

    def add(target: str, value: float | None, goal: str, met: bool | None, fmt: str) -> None:
        rows.append({"target": target, "measured": "-" if value is None else fmt.format(value), "value": value,
                     "goal": goal, "met": None if met is None else bool(met)})

    if s:  # the standard suite ran
        growth = s["stream-10x"]["ttfa_p50_s"] / s["stream"]["ttfa_p50_s"]
        add("TTFA growth, 10x longer text (stream)", growth, "< 1.5x", growth < 1.5, "{:.2f}x")
        gain = s["barrier"]["ttfa_p50_s"] / s["stream"]["ttfa_p50_s"]
        codes = s["barrier"]["audio_s_total"] / s["barrier"]["workload_num_requests"] * 50
        add(f"TTFA barrier / stream (~{codes:.0f}-code utterances)", gain, ">= 5x", gain >= 5, "{:.1f}x")
        conc = [k for k in s if k.startswith("concurrency-") and k != "concurrency-1"]
        for label in ["concurrency-1", *conc]:
            overhead = s[label]["overhead_us_per_unit"]
            add(f"scheduler overhead per WorkUnit ({label})", overhead, "< 30 us", overhead < 30, "{:.1f} us")
        if conc:
            scale = s[conc[0]]["audio_s_per_wall_s"] / s["concurrency-1"]["audio_s_per_wall_s"]
            add(f"audio s per wall s, {conc[0]} / concurrency-1", scale, "(no target)", None, "{:.2f}x")
    if reference:
        ref_results, outputs = reference
        r = _by_label(ref_results)
        many = next(k for k in r if k.startswith("ours-") and k != "ours-1")
        ttfa = r["generate"]["ttfa_p50_s"] / r["ours-1"]["ttfa_p50_s"]
        add("TTFA generate / ours (chat, greedy, concurrency 1)", ttfa, ">= 5x", ttfa >= 5, "{:.1f}x")
        thr = r[many]["audio_s_per_wall_s"] / r["generate"]["audio_s_per_wall_s"]
        add(f"audio s per wall s, {many} / generate one by one", thr, ">= 3x", thr >= 3, "{:.1f}x")
        n = outputs["requests"]
        for label in ("ours-1", many):
            same = outputs[label]["same_tokens"]
            add(f"requests whose tokens and codes equal generate's ({label})", same, f"{n} of {n}", same == n, "{:d}")
        for label in ("ours-1", many):
            add(f"waveform vs generate, worst request ({label}, chunked token2wav)", outputs[label]["min_snr_db"],
                "(reported)", None, "{:.0f} dB SNR")
    if "speak_s" in timings:
        add("omni speak, process start to file closed", timings["speak_s"], "< 1 s", timings["speak_s"] < 1.0, "{:.2f} s")
        add("omni --help", timings["help_s"], "< 0.3 s", timings["help_s"] < 0.3, "{:.2f} s")
    return rows
