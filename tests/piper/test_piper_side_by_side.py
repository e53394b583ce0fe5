"""The card's own placement, the acoustic model on its own thread beside the decoder, changes no sample; and
the threads its two sessions take by default add up to the cores."""

from __future__ import annotations

import numpy as np
from runtime_helpers import run_alone

from omni_cli.build import EngineOptions, build_engine
from omni_cli.spec import SpeakRequest

MIX = [
    SpeakRequest("Good morning. How are you? The bus leaves at noon.", seed=1),
    SpeakRequest("It costs 12 dollars. That is fine.", seed=2, speed=1.25),
]


def test_the_cards_placement_equals_the_inline_engine_serial_and_interleaved(voice):
    engine = build_engine(EngineOptions("piper_joe", max_batch=1))
    try:
        assert engine.program.card.placement["acoustic"].executor == "thread"
        handles = [engine.submit(r, collect=True) for r in MIX]  # both run at once, interleaved
        together = [h.result() for h in handles]
        alone = engine.submit(MIX[0], collect=True).result()
    finally:
        engine.close()
    for request, ours in zip(MIX, together, strict=True):
        inline = run_alone(voice, request)
        assert ours.status.value == "finished" and ours.samples.size > 22050
        assert np.array_equal(ours.samples, inline.samples)
    assert np.array_equal(alone.samples, together[0].samples)


def test_zero_threads_is_one_per_core_each(monkeypatch):
    from omni_cli.backends.piper import sessions

    for cores in (1, 2, 3, 8):
        monkeypatch.setattr(sessions.os, "sched_getaffinity", lambda _pid, n=cores: set(range(n)), raising=False)
        assert sessions.default_threads() == cores
