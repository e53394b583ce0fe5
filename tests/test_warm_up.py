"""Engine.warm_up: one request made and dropped before real ones (`omni serve` before it listens), leaving
nothing behind and changing no later request's output."""

from __future__ import annotations

import numpy as np

from omni_cli.engine import Engine, WorkUnitEvent
from omni_cli.spec import SpeakRequest
from omni_cli.spec.stream import RequestStatus


def test_warm_up_stops_after_its_chunks_and_leaves_nothing_behind(toy):
    engine = Engine(toy)
    units: list[WorkUnitEvent] = []
    engine.subscribe(lambda e: units.append(e) if isinstance(e, WorkUnitEvent) else None)
    seconds = engine.warm_up("a sentence long enough for a few chunks of codes, and then some more words", 2)
    assert seconds > 0 and engine.is_idle and engine.budget.reserved == 0
    made = [e for e in units if e.loop == "vocoder"]
    assert len(made) == 2, made  # cancelled after two chunks of audio, not run to its end
    alone = Engine(toy).submit(SpeakRequest("Hello there", seed=3), collect=True).result()
    after = engine.submit(SpeakRequest("Hello there", seed=3), collect=True).result()
    assert after.status is RequestStatus.FINISHED and after.tokens == alone.tokens
    assert np.array_equal(after.samples, alone.samples) and after.samples.size > 0


def test_a_warm_up_shorter_than_its_chunks_just_ends(toy):
    engine = Engine(toy)
    assert engine.warm_up("Hi.", audio_chunks=1000) > 0
    assert engine.is_idle and engine.budget.reserved == 0
