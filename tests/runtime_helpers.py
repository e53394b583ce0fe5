"""Run requests alone or together through fresh engines, and the toy card with other chunk settings (imported
by the runtime tests)."""

from __future__ import annotations

from dataclasses import replace

from omni_cli.engine import Engine


def run_alone(program, request, **engine_options):
    engine = Engine(program, **engine_options)
    return engine.submit(request, collect=True).result()


def run_together(program, requests, **engine_options):
    engine = Engine(program, **engine_options)
    handles = [engine.submit(r, collect=True) for r in requests]
    for _ in engine.events():
        pass
    return engine, [h.result() for h in handles]


def toy_with_vocoder(overrides: dict | None = None, **loop_fields):
    """The toy card's program with its audio_decode loop's fields replaced (`first_chunk_codes=8`, ...), after
    `overrides` (card values by dotted key, as `--set` gives them)."""
    from omni_cli.api import load
    from omni_cli.program import compile_program

    program = load("qwen2_5_omni_toy", overrides=overrides)
    card = program.card
    loops = {n: replace(loop, **loop_fields) if loop.kind == "audio_decode" else loop for n, loop in card.loops.items()}
    return compile_program(card.replaced(loops=loops), program.program)


CHUNKED_TEXT = "a sentence long enough for a few chunks of codes, and then some more words after it, and more"


def speak_recording_chunks(monkeypatch, program, seconds_per_call: float = 0.0):
    """Speak CHUNKED_TEXT through `program` (a toy card's) on a clock that moves only while the vocoder runs,
    `seconds_per_call` per call; return the audio and the (start, end) of each chunk the vocoder was asked for."""
    from omni_cli.backends.toy.vocoder import NumpyVocoder
    from omni_cli.spec.request import SpeakRequest

    calls: list[tuple[int, int]] = []
    now = [0.0]
    run = NumpyVocoder.run

    def timed(self, kind, inputs):
        calls.extend((i.start, i.end) for i in inputs)
        now[0] += seconds_per_call
        return run(self, kind, inputs)

    engine = Engine(program)
    engine.scheduler.pacer.clock = lambda: now[0]  # the scheduler's pacing reads it, never the loop
    with monkeypatch.context() as patched:  # undone after: a second call records only its own chunks
        patched.setattr(NumpyVocoder, "run", timed)
        result = engine.submit(SpeakRequest(CHUNKED_TEXT, seed=5), collect=True).result()
    return result.samples, calls
