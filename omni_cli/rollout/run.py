"""`rollout()`: K samples of each prompt, interleaved through one engine, each saved with its behaviour."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ..audio import open_audio_output
from ..engine import Engine, RequestHandle
from ..program import CompiledProgram
from ..spec import SpeakRequest
from ..spec.stream import RequestDone
from .prompts import Prompt
from .records import FORMAT, Sample, behaviour, file_identity, save_sample, versions

MANIFEST = "rollout.jsonl"  # one line per sample, appended as each is saved: an index a trainer can filter


@dataclass(frozen=True)
class SampleInfo:
    """What the caller hears as each sample is saved (the CLI's progress line)."""

    prompt_index: int
    sample_index: int
    seed: int
    status: str
    path: Path
    num_tokens: dict[str, int]
    done: int  # samples saved so far, this one included
    total: int | None  # None: prompts still being read (a pipe)


def sample_name(prompt_index: int, sample_index: int) -> str:
    return f"p{prompt_index + 1:04d}_s{sample_index + 1:03d}"


def sample_seed(prompt: Prompt, prompt_index: int, sample_index: int, samples: int, seed: int) -> int:
    """Distinct within a prompt; across prompts distinct too unless a prompt sets its own seed."""
    base = prompt.seed if prompt.seed is not None else seed + prompt_index * samples
    return (base + sample_index) % 2**32


def rollout(engine: Engine, prompts: Iterable[Prompt], samples: int, out_dir: Path, *, seed: int = 0,
            concurrency: int = 8, defaults: dict[str, Any] | None = None,
            on_sample: Callable[[SampleInfo], None] | None = None, num_prompts: int | None = None) -> list[SampleInfo]:
    """Run `samples` samples of every prompt (up to `concurrency` at once) and save each to `out_dir`.

    Each request is checked (text, voice, …) before it runs: a bad prompt raises SpecError. A sequence of
    prompts is checked whole before the first one runs, so nothing is written; any other iterable (a pipe's
    lines) is read as the run needs it, so an endless one takes bounded memory, and a bad prompt stops the run
    there, the samples saved before it kept (`num_prompts`: how many it holds, where the caller knows, for the
    progress's total). Returns one SampleInfo per sample, in the order they finished.
    It drives `engine` and reads its events: give it an engine of its own.
    """
    jobs = _requests(engine, prompts, samples, seed, defaults or {})
    total = None if num_prompts is None else num_prompts * samples
    if isinstance(prompts, Sequence):
        listed = list(jobs)
        jobs, total = iter(listed), len(listed)
    first = next(jobs, None)  # a bad first prompt fails before any file
    jobs = itertools.chain([first] if first is not None else [], jobs)
    saved: list[SampleInfo] = []
    active: dict[str, tuple[int, int, SpeakRequest, RequestHandle]] = {}
    with open(out_dir / MANIFEST, "w", encoding="utf-8") as manifest:
        while True:
            while len(active) < concurrency and (job := next(jobs, None)) is not None:
                i, k, request = job
                handle = engine.submit(request, collect=True)
                active[handle.request_id] = (i, k, request, handle)
            if not active:
                return saved
            engine.step()
            for event in engine.poll():
                if isinstance(event, RequestDone) and event.request_id in active:
                    i, k, request, handle = active.pop(event.request_id)
                    info = _save(engine.program, request, handle, event, (i, k), out_dir, len(saved) + 1, total)
                    manifest.write(json.dumps(_manifest_line(info), sort_keys=True) + "\n")
                    manifest.flush()
                    saved.append(info)
                    if on_sample is not None:
                        on_sample(info)


def _requests(engine: Engine, prompts: Iterable[Prompt], samples: int, seed: int,
              defaults: dict[str, Any]) -> Iterator[tuple[int, int, SpeakRequest]]:
    """(prompt index, sample index, request) for every sample, each prompt checked as it is read."""
    for i, prompt in enumerate(prompts):
        requests = [prompt.request(sample_seed(prompt, i, k, samples, seed), **defaults) for k in range(samples)]
        engine.program.wire("check", requests[-1], lambda event: None)  # a bad prompt fails before it runs
        for k, request in enumerate(requests):
            yield i, k, request


def _save(program: CompiledProgram, request: SpeakRequest, handle: RequestHandle, done: RequestDone,
          index: tuple[int, int], out_dir: Path, count: int, total: int | None) -> SampleInfo:
    result, (i, k) = handle.result(), index
    meta = sample_meta(program, request, i, k)
    meta.update(status=done.status.value, error=done.error, stop_reasons=done.metrics.get("stop_reasons"),
                sample_rate=result.sample_rate, num_samples=int(result.samples.shape[0]), text_out=result.text)
    columns = behaviour(result)
    path = out_dir / f"{sample_name(i, k)}.npz"
    save_sample(path, Sample(meta, columns, result.samples))
    with open_audio_output(path.with_suffix(".wav"), result.sample_rate) as wav:  # to listen to, or for a recogniser
        wav.write(result.samples)
    num_tokens = {loop: len(cols["token"]) for loop, cols in columns.items() if "token" in cols}
    return SampleInfo(i, k, request.seed, done.status.value, path, num_tokens, count, total)


def sample_meta(program: CompiledProgram, request: SpeakRequest, prompt_index: int, sample_index: int) -> dict[str, Any]:
    """The header of a sample: what was asked, of which card and program, with which settings and versions."""
    card = program.card
    voice = request.voice if request.voice is not None else card.defaults.voice
    if voice is None and program.voices():
        voice = program.voices()[0]
    # what was asked; not the runtime store of kept encodings
    fields = {k: v for k, v in asdict(request).items() if k not in ("replay", "request_id", "audio", "keep_encoded")}
    fields.update(mode=request.mode or card.defaults.mode, voice=voice,
                  handoff=request.handoff)  # None: each hand-off as the program says
    loops: dict[str, Any] = {}
    for loop_id, loop in program.loops.items():
        entry: dict[str, Any] = {"kind": loop.kind, "component": loop.spec.component}
        entry.update(loop.behaviour_settings(request.seed))
        loops[loop_id] = entry
    backends = {c.backend for c in card.components.values()}
    return {
        "format": FORMAT, "prompt_index": prompt_index, "sample_index": sample_index, "request": fields,
        "card": {"name": card.model, **file_identity(card.source)},
        "program": {"name": program.program.program, **file_identity(program.program.source)},
        "settings": {k: v for k, v in program.settings.items() if v is not None},
        "backend": sorted(backends)[0], "loops": loops, "versions": versions(backends),
    }


def _manifest_line(info: SampleInfo) -> dict[str, Any]:
    return {"prompt_index": info.prompt_index, "sample_index": info.sample_index, "seed": info.seed,
            "status": info.status, "file": info.path.name, "num_tokens": info.num_tokens}
