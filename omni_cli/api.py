"""The library's front door: load a voice (a card on an engine, placed and replicated as asked), speak, stream.

    with omni_cli.load_voice("piper_joe") as voice:
        speech = voice.speak("Hello there.")        # Speech: samples, sample_rate, text
        for chunk in voice.stream("And again."):    # AudioChunk, as each is made
            ...
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .build import EngineOptions, build_engine
from .defaults import DEFAULT_CARD
from .engine import Engine
from .program import CompiledProgram, compile_program, load_checked
from .spec import SpeakRequest
from .spec.stream import AudioChunk, MonoAudio, RequestDone, RequestStatus, TextPiece

__all__ = ["EngineOptions", "Speech", "SpeechFailed", "Voice", "build_engine", "engine", "load", "load_checked",
           "load_voice"]


class SpeechFailed(RuntimeError):
    """A request that did not finish (a component broke, a replica died, it was cancelled)."""


@dataclass(frozen=True)
class Speech(MonoAudio):
    """What one `speak` made: the waveform and the text the model said with it (num_samples, duration_s)."""

    samples: np.ndarray  # float32 mono in [-1, 1]
    sample_rate: int  # Hz
    text: str  # the thinker's text (the input itself in echo mode; the reply in chat mode)

    def write_wav(self, path: str | Path) -> None:
        """A 16-bit PCM WAV file of the samples."""
        from .audio import open_audio_output

        with open_audio_output(Path(path), self.sample_rate) as out:
            out.write(self.samples)


class Voice:
    """A card on a ready engine (or a pool of replicas). One request at a time through `speak` or `stream`;
    `close()` (or leaving a `with` block) stops every worker, replica and actor it started."""

    def __init__(self, engine: Any):
        self.engine = engine  # an Engine, or a ReplicaPool (same calls)
        self.program: CompiledProgram = engine.program
        self.sample_rate: int = engine.sample_rate

    @property
    def voices(self) -> list[str]:
        """The speakers this card has (a request's `voice=`)."""
        return list(self.program.voices())

    def speak(self, text: str, **request: Any) -> Speech:
        """Speak `text` to its end. `request`: SpeakRequest's fields (voice, seed, mode, max_tokens, speed, …).
        Raises SpecError for a bad request, SpeechFailed if it did not finish."""
        pieces: list[str] = []
        chunks = [event.samples for event in self._events(text, request, pieces) if isinstance(event, AudioChunk)]
        samples = np.concatenate(chunks) if chunks else np.zeros(0, np.float32)
        return Speech(samples, self.sample_rate, "".join(pieces))

    def stream(self, text: str, **request: Any) -> Iterator[AudioChunk]:
        """Speak `text`, yielding its audio chunks as they are made; stopping early cancels the request."""
        for event in self._events(text, request, []):
            if isinstance(event, AudioChunk):
                yield event

    def close(self) -> None:
        self.engine.close()

    def __enter__(self) -> Voice:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _events(self, text: str, request: Mapping[str, Any], pieces: list[str]) -> Iterator[Any]:
        """This request's events to its end (its text pieces joined into `pieces`); raises if it did not finish."""
        handle = self.engine.submit(SpeakRequest(text, **request))
        rid, done = handle.request_id, None
        events = handle.stream() if isinstance(self.engine, Engine) else self.engine.events()
        try:
            for event in events:
                if event.request_id != rid:  # a pool's events are every request's (one at a time: none other)
                    continue
                if isinstance(event, TextPiece):
                    pieces.append(event.text)
                elif isinstance(event, RequestDone):
                    done = event
                yield event
        finally:
            if done is None:  # the caller stopped early (or it broke): it must not run on behind the next one
                self.engine.cancel_all()
                for _ in (handle.stream() if isinstance(self.engine, Engine) else self.engine.events()):
                    pass
        if done is None or done.status is not RequestStatus.FINISHED:
            status = "ended" if done is None else done.status.value
            raise SpeechFailed(f"request {rid} {status}: {done.error if done else 'no end event'}")


def load_voice(card: str = DEFAULT_CARD, *, placement: str | None = None, replicas: int = 1,
               ray_address: str | None = None, settings: Mapping[str, Any] | None = None,
               **options: Any) -> Voice:
    """Load a card (name or path) and start its engine: components placed by `placement` (inline, thread,
    process, process:N, ray, or NAME=KIND,… over the card's), `replicas` whole engines, on a Ray cluster at
    `ray_address`. `settings`: the hf backend's model_path, dtype, device. `options`: EngineOptions' others
    (program, policy, overrides, max_batch). Raises SpecError for a bad card or placement."""
    return Voice(build_engine(EngineOptions(card, placement=placement, replicas=replicas, ray_address=ray_address,
                                            settings=dict(settings or {}), **options)))


def load(card: str = DEFAULT_CARD, program: str | None = None, settings: dict[str, Any] | None = None,
         overrides: dict[str, Any] | None = None) -> CompiledProgram:
    """Compile a card (name or path) with a program (name or path; default: the card's). `overrides`: card
    values by dotted key, as `--set` gives them (`{"components.vocoder.params.dit_compile": True}`)."""
    card_spec, program_spec = load_checked(card, program, overrides)
    return compile_program(card_spec, program_spec, settings)


def engine(card: str = DEFAULT_CARD, program: str | None = None, settings: dict[str, Any] | None = None,
           **engine_options: Any) -> Engine:
    """`Engine(load(card, program, settings), **engine_options)`: one inline engine, for driving requests."""
    return Engine(load(card, program, settings), **engine_options)
