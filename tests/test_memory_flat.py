"""Finished requests are not kept (issue 12): the engine holds nothing of a request once it ended and was read."""

from __future__ import annotations

import gc
import weakref

from omni_cli.engine import Engine, RequestHandle
from omni_cli.engine.request import EngineRequest
from omni_cli.loops import Channel, LoopState
from omni_cli.spec import SpeakRequest
from omni_cli.spec.stream import RequestDone


def test_an_ended_request_leaves_nothing_in_the_engine(toy):
    engine = Engine(toy)
    handle = engine.submit(SpeakRequest("Drop me when done", seed=2))
    wired = weakref.ref(engine.inspect(handle.request_id))
    events = list(engine.events())
    assert isinstance(events[-1], RequestDone) and engine.is_idle and engine.num_active == 0
    assert engine.inspect(handle.request_id) is None and engine.poll() == []
    gc.collect()
    assert wired() is None  # its loop states, caches, channels and hidden states are gone


PER_REQUEST = (EngineRequest, LoopState, Channel, RequestHandle)


def live(types: tuple, besides: list | None = None) -> int:
    """Objects of `types` alive now, those in `besides` left out (type(): no proxy lookups)."""
    skip = {id(o) for o in besides or ()}
    return sum(1 for o in gc.get_objects() if issubclass(type(o), types) and id(o) not in skip)


def test_nothing_per_request_survives_many_utterances_that_were_read(toy):
    """A `tail -f | omni speak` shape: requests keep coming, each read as it ends, handles dropped."""
    engine = Engine(toy)
    samples = 0
    # what another test left alive in this process (xdist runs many files in one worker) is not this engine's:
    # held here, so no object of ours can take one of their addresses
    gc.collect()
    before_us = [o for o in gc.get_objects() if issubclass(type(o), PER_REQUEST)]

    def run(n: int) -> int:
        nonlocal samples
        for i in range(n):
            engine.submit(SpeakRequest("ok", seed=i))
            if engine.num_active >= 4 or i == n - 1:
                for event in engine.events():
                    samples += getattr(event, "num_samples", 0)
        gc.collect()
        return len(gc.get_objects())

    run(10)  # warm-up: first-use caches are not growth
    before = run(40)
    after = run(160)
    assert samples > 0 and engine.is_idle
    assert live(PER_REQUEST, besides=before_us) == 0  # none of the 210 requests is held
    assert after - before < 200, (before, after)  # 120 more utterances kept would be thousands of objects
