"""The suites `omni bench` runs: the standard configurations, process start-up, and ours beside HF generate."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from ..backends.base import LoadReporter
from ..engine.executors import threads_as_placed
from ..program import CompiledProgram
from .loads import timed_loads
from .workload import BenchResult, Workload, max_rss_bytes, run_workload, starts_executors

# told before each configuration runs: (its label, its number from 1, how many there are, what it runs)
BenchProgress = Callable[[str, int, int, str], None]


def _no_progress(label: str, index: int, total: int, what: str) -> None:
    pass


def _described(workload: Workload) -> str:
    return (f"{workload.num_requests} utterance{'s' if workload.num_requests != 1 else ''} of "
            f"{workload.text_chars} characters, concurrency {workload.concurrency}")


def standard_suite(program: CompiledProgram, *, num_requests: int = 8, short_chars: int = 60,
                   concurrency: int = 8, on_progress: BenchProgress = _no_progress) -> list[BenchResult]:
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
    results = []
    for index, (label, workload) in enumerate(runs, 1):
        on_progress(label, index, len(runs), _described(workload))
        results.append(run_workload(program, workload, label))
    return results


def process_timings(card: str, repeats: int = 3, model_path: str | None = None,
                    overrides: list[str] | None = None) -> dict[str, float]:
    """Best-of-`repeats` wall seconds of `omni --help` and of `omni speak` (start to file closed), on
    `model_path` when given (an hf card has no checkpoint of its own), with `overrides` as `--set` gave them."""
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
            "speak_s": best(omni + ["speak", "--card", card, "-q", "--force", "-o", out]
                            + ([] if model_path is None else ["--model-path", model_path])
                            + [arg for pair in overrides or [] for arg in ("--set", pair)]
                            + ["The quick brown fox jumps over the lazy dog."]),
        }


def greedy_variant(program: CompiledProgram, max_tokens: dict[str, int], talker_min: int = 0,
                   on_load: LoadReporter | None = None) -> CompiledProgram:
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
    variant = card.replaced(loops=loops, components=components, params={**card.params, "codec_bos_pad_in_prefill": False})
    return compile_program(variant, program.program, program.settings, on_load)


def reference_suite(program: CompiledProgram, *, num_requests: int = 4, short_chars: int = 50,
                    concurrency: int = 8, thinker_max: int = 12,
                    talker_codes: int = 200, load_rounds: int = 1, placement: str = "card", rounds: int = 1,
                    on_progress: BenchProgress = _no_progress) -> tuple[list[BenchResult], dict[str, Any]]:
    """Ours (chat mode, greedy, streaming) beside Hugging Face `generate` run one request after another.

    Returns the results ("ours-1", f"ours-{concurrency}" unless that is 1, "generate", and "generate, N
    threads" where ours-N used more cores than ours-1) and how the outputs compare, with each side's load
    ("load": seconds and weight tensors read, the fastest of `load_rounds` alternated loads; loads.py says
    what counts).
    Both sides make `talker_codes` codes per utterance (EOS suppressed before, the bound after): a random
    tiny talker would otherwise stop at whatever length its weights happen to give.
    `placement`: where ours runs, "card" (the card's placement) or `--placement`'s KIND or NAME=KIND,...
    Each side first makes one utterance untimed, as a served engine does before it listens (`omni serve`):
    a process's first chunks of each length cost more (oneDNN sets up each convolution's shapes, 35-75 ms
    more on the tiny checkpoint's first 16-code chunk), which is start-up, not streaming. Where ours runs
    on workers of its own (a placement's processes or Ray actors, started with each run), each run makes
    its untimed utterance on those workers first.
    `rounds`: the whole comparison (ours, then generate) that many times one after another, on the loads
    above; the first round's results and comparison are returned, and with more than one,
    `compared["rounds"]` holds every round's (results, comparison) in order, each to be judged on its own
    (targets.across_rounds).
    """
    import numpy as np

    from ..backends.hf.reference import GenerateReference
    from ..backends.hf.rows import usable_cores

    model_path = program.settings.get("model_path") or program.card.params["model_path"]
    ours, loads = timed_loads(program, model_path, lambda on_load: greedy_variant(
        program, {"thinker": thinker_max, "talker": talker_codes + 1}, talker_min=talker_codes, on_load=on_load),
        load_rounds)
    work = Workload(num_requests=num_requests, text_chars=short_chars, concurrency=1, mode="chat", placement=placement)
    workloads = (work,) if concurrency == 1 else (work, replace(work, concurrency=concurrency))
    # generate gets the cores ours used (intra-op threads: the widest component's count times its workers, up
    # to the cores there are). A request alone never splits its rows (rows.py), so at concurrency 1 that is
    # without the vocoder's row threads; when ours-N used more cores with them, generate runs again with
    # that many threads, for the throughput ratio ("generate, N threads")
    placed = threads_as_placed(ours, None if placement == "card" else placement)
    threads = wide = None
    if placed:
        cores = max(usable_cores(), max(t["count"] for t in placed.values()))
        threads = min(cores, max(t["count"] * t.get("workers", 1) for t in placed.values()))
        wide = min(cores, max(t["count"] * t.get("rows", 1) * t.get("workers", 1) for t in placed.values()))
    if len(workloads) == 1 or wide == threads:
        wide = None
    per_round = len(workloads) + (2 if wide else 1)
    total = per_round * rounds
    thinker, talker = ours.roles["thinker"], ours.roles["talker"]
    card = ours.card
    thinker_max, talker_max = card.loop_for_role("thinker").max_tokens, card.loop_for_role("talker").max_tokens
    voice = ours.voices()[0]
    # generate runs on our components' own loaded model: the same weights, no second copy kept (its own load
    # was timed above and released)
    references = {count: GenerateReference(model_path, sorted(talker.eos_token_ids), model=thinker.model,
                                           num_threads=count) for count in ((threads, wide) if wide else (threads,))}

    def generate(reference: GenerateReference, request: Any) -> Any:
        return reference.run(thinker.encode(request.text, "chat").prefill_ids, voice=voice, seed=request.seed,
                             thinker_max=thinker_max, talker_max=talker_max, talker_min=talker_codes)

    def one_round(round_: int) -> tuple[list[BenchResult], dict[str, Any]]:
        """Ours, then generate: one round's results and how their outputs compare (the first round makes each
        side's untimed utterance first)."""
        first, named = 1 + per_round * (round_ - 1), f", round {round_}" if rounds > 1 else ""
        results: list[BenchResult] = []
        for index, workload in enumerate(workloads, first):
            label = f"ours-{workload.concurrency}"
            on_progress(label + named, index, total, f"{_described(workload)}, {talker_codes} codes each")
            # untimed first (above): this process's shapes once, under the first progress line; and a run's own
            # workers (a placement's processes or actors start with it, cold), each time
            warm = (round_ == 1 and index == first) or starts_executors(ours, workload)
            results.append(run_workload(ours, workload, label, keep_outputs=True, warm_up=warm))
        generated: dict[str, list] = {}  # label -> generate's runs
        for index, (count, reference) in enumerate(references.items(), first + len(workloads)):
            label = "generate" if count == threads else f"generate, {count} threads"
            on_progress(label + named, index, total, f"Hugging Face generate, {_described(work)}, one after another"
                        + (f", {count} intra-op thread{'s' if count > 1 else ''}" if wide else ""))
            if round_ == 1 and count == threads:  # generate's first utterance is untimed too
                generate(reference, work.requests()[0])
            generated[label] = [generate(reference, request) for request in work.requests()]
        return results + [BenchResult(label, work, sum(r.latency_s for r in runs), ttfa_s=[r.latency_s for r in runs],
                                      latency_s=[r.latency_s for r in runs],
                                      audio_s=[r.samples.size / 24000 for r in runs], max_rss_bytes=max_rss_bytes())
                          for label, runs in generated.items()], compare(results, generated["generate"])

    def compare(results: list[BenchResult], runs: list[Any]) -> dict[str, Any]:
        compared: dict[str, Any] = {"requests": len(runs), "generate_threads": threads, "load": loads}
        if wide:
            compared["generate_wide_threads"] = wide
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
        return compared

    every = [one_round(round_) for round_ in range(1, rounds + 1)]
    results, compared = every[0]
    if rounds > 1:
        compared["rounds"] = every
    return results, compared
