"""The suites `omni bench` runs: the standard configurations, process start-up, and ours beside HF generate."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace

from ..backends.base import LoadReporter
from ..program import CompiledProgram
from .workload import BenchResult, Workload, run_workload

# told before each configuration runs: (its label, its number from 1, how many there are, what it runs)
BenchProgress = Callable[[str, int, int, str], None]


def _no_progress(label: str, index: int, total: int, what: str) -> None:
    pass


def _described(workload: Workload) -> str:
    return (f"{workload.num_requests} utterance{'s' if workload.num_requests != 1 else ''} of "
            f"{workload.text_chars} characters, concurrency {workload.concurrency}")


def standard_suite(program: CompiledProgram, *, num_requests: int = 8, short_chars: int = 60,
                   concurrency: int = 8, on_progress: BenchProgress = _no_progress) -> list[BenchResult]:
    """The configurations docs/performance.md reports: length scaling, barrier vs stream, concurrency.

    60 characters make about 200 codec tokens on the toy card, the utterance the targets compare on.
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
