"""`omni bench --reference`: ours (chat mode, greedy, streaming) beside Hugging Face `generate`, round by round."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..engine.executors import threads_as_placed
from ..program import CompiledProgram
from .loads import timed_loads
from .suites import BenchProgress, _described, _no_progress, greedy_variant
from .workload import BenchResult, Workload, max_rss_bytes, run_workload, starts_executors


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
    a process's first chunks of each length cost more (oneDNN sets up each convolution's shapes), which is
    start-up, not streaming. Where ours runs
    on workers of its own (a placement's processes or Ray actors, started with each run), each run makes
    its untimed utterance on those workers first.
    `rounds`: the whole comparison (ours, then generate) that many times one after another, on the loads
    above; the first round's results and comparison are returned, and with more than one,
    `compared["rounds"]` holds every round's (results, comparison) in order, each to be judged on its own
    (targets.across_rounds).
    """
    run = Comparison(program, num_requests, short_chars, concurrency, thinker_max, talker_codes, load_rounds,
                     placement, rounds, on_progress)
    every = [run.one_round(round_) for round_ in range(1, rounds + 1)]
    results, compared = every[0]
    if rounds > 1:
        compared["rounds"] = every
    return results, compared


class Comparison:
    """One reference comparison's set-up (each side loaded, the workloads, generate's thread counts), and its
    rounds."""

    def __init__(self, program: CompiledProgram, num_requests: int, short_chars: int, concurrency: int,
                 thinker_max: int, talker_codes: int, load_rounds: int, placement: str, rounds: int,
                 on_progress: BenchProgress):
        from ..backends.hf.reference import GenerateReference

        model_path = program.settings.get("model_path") or program.card.params["model_path"]
        self.ours, self.loads = timed_loads(program, model_path, lambda on_load: greedy_variant(
            program, {"thinker": thinker_max, "talker": talker_codes + 1}, talker_min=talker_codes, on_load=on_load),
            load_rounds)
        self.work = work = Workload(num_requests=num_requests, text_chars=short_chars, concurrency=1, mode="chat",
                                    placement=placement)
        self.workloads = (work,) if concurrency == 1 else (work, replace(work, concurrency=concurrency))
        self.threads, self.wide = self._cores(placement)
        self.per_round = len(self.workloads) + (2 if self.wide else 1)
        self.total, self.rounds, self.talker_codes = self.per_round * rounds, rounds, talker_codes
        self.on_progress = on_progress
        self.thinker, talker = self.ours.roles["thinker"], self.ours.roles["talker"]
        card = self.ours.card
        self.thinker_max = card.loop_for_role("thinker").max_tokens
        self.talker_max = card.loop_for_role("talker").max_tokens
        self.voice = self.ours.voices()[0]
        # generate runs on our components' own loaded model: the same weights, no second copy kept (its own load
        # was timed above and released)
        counts = (self.threads, self.wide) if self.wide else (self.threads,)
        self.references = {count: GenerateReference(model_path, sorted(talker.eos_token_ids),
                                                    model=self.thinker.model, num_threads=count) for count in counts}

    def _cores(self, placement: str) -> tuple[int | None, int | None]:
        """generate gets the cores ours used (intra-op threads: the widest component's count times its workers,
        up to the cores there are). A request alone never splits its rows (rows.py), so at concurrency 1 that is
        without the vocoder's row threads; when ours-N used more cores with them, generate runs again with that
        many threads, for the throughput ratio ("generate, N threads"): (threads, that second count or None)."""
        from ..backends.hf.rows import usable_cores

        placed = threads_as_placed(self.ours, None if placement == "card" else placement)
        threads = wide = None
        if placed:
            cores = max(usable_cores(), max(t["count"] for t in placed.values()))
            threads = min(cores, max(t["count"] * t.get("workers", 1) for t in placed.values()))
            wide = min(cores, max(t["count"] * t.get("rows", 1) * t.get("workers", 1) for t in placed.values()))
        if len(self.workloads) == 1 or wide == threads:
            wide = None
        return threads, wide

    def generate(self, reference: Any, request: Any) -> Any:
        return reference.run(self.thinker.encode(request.text, "chat").prefill_ids, voice=self.voice,
                             seed=request.seed, thinker_max=self.thinker_max, talker_max=self.talker_max,
                             talker_min=self.talker_codes)

    def one_round(self, round_: int) -> tuple[list[BenchResult], dict[str, Any]]:
        """Ours, then generate: one round's results and how their outputs compare (the first round makes each
        side's untimed utterance first)."""
        first, named = 1 + self.per_round * (round_ - 1), f", round {round_}" if self.rounds > 1 else ""
        results: list[BenchResult] = []
        for index, workload in enumerate(self.workloads, first):
            label = f"ours-{workload.concurrency}"
            self.on_progress(label + named, index, self.total,
                             f"{_described(workload)}, {self.talker_codes} codes each")
            # untimed first (above): this process's shapes once, under the first progress line; and a run's own
            # workers (a placement's processes or actors start with it, cold), each time
            warm = (round_ == 1 and index == first) or starts_executors(self.ours, workload)
            results.append(run_workload(self.ours, workload, label, keep_outputs=True, warm_up=warm))
        generated = self._generated(round_, first + len(self.workloads), named)
        work = self.work
        return results + [BenchResult(label, work, sum(r.latency_s for r in runs), ttfa_s=[r.latency_s for r in runs],
                                      latency_s=[r.latency_s for r in runs],
                                      audio_s=[r.samples.size / 24000 for r in runs], max_rss_bytes=max_rss_bytes())
                          for label, runs in generated.items()], self.compare(results, generated["generate"])

    def _generated(self, round_: int, first: int, named: str) -> dict[str, list]:
        """generate's runs of the workload, one request after another, by label (one per thread count)."""
        generated: dict[str, list] = {}
        work = self.work
        for index, (count, reference) in enumerate(self.references.items(), first):
            label = "generate" if count == self.threads else f"generate, {count} threads"
            self.on_progress(label + named, index, self.total,
                             f"Hugging Face generate, {_described(work)}, one after another"
                             + (f", {count} intra-op thread{'s' if count > 1 else ''}" if self.wide else ""))
            if round_ == 1 and count == self.threads:  # generate's first utterance is untimed too
                self.generate(reference, work.requests()[0])
            generated[label] = [self.generate(reference, request) for request in work.requests()]
        return generated

    def compare(self, results: list[BenchResult], runs: list[Any]) -> dict[str, Any]:
        import numpy as np

        compared: dict[str, Any] = {"requests": len(runs), "generate_threads": self.threads, "load": self.loads}
        if self.wide:
            compared["generate_wide_threads"] = self.wide
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
