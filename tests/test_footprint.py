"""A request's footprint is sized once, at wiring, each loop from the bound of the loop it reads (issue 11):
a cap on the thinker's reply shrinks what the talker and the vocoder reserve."""

from __future__ import annotations

from omni_cli.engine import Engine
from omni_cli.program import size_request
from omni_cli.spec import SpeakRequest


def footprint(program, request):
    return program.wire("f", request, lambda event: None).footprint


def test_each_loop_reads_the_bound_of_the_loop_upstream(toy):
    assert toy.upstream == {"thinker_decode": None, "talker_decode": "thinker_decode", "vocoder": "talker_decode"}


def test_a_cap_on_the_reply_shrinks_every_loop_downstream(toy, monkeypatch):
    vocoder, talker = toy.roles["vocoder"], toy.roles["talker"]
    sized_for = []
    original = vocoder.state_bytes
    monkeypatch.setattr(vocoder, "state_bytes", lambda codes=None: sized_for.append(codes) or original(codes))
    short = footprint(toy, SpeakRequest("Tell me a story", mode="chat", max_tokens=2)).by_loop
    long = footprint(toy, SpeakRequest("Tell me a story", mode="chat", max_tokens=200)).by_loop
    assert short["thinker_decode"].resident_bytes < long["thinker_decode"].resident_bytes
    assert short["talker_decode"].resident_bytes < long["talker_decode"].resident_bytes
    # the vocoder is sized for the codes the talker can make from that many reply tokens, within its own limit
    talker_limit = toy.card.loops["talker_decode"].max_tokens
    assert sized_for == [min(talker_limit, talker.max_codes_for(2)), min(talker_limit, talker.max_codes_for(200))]


def test_the_footprint_does_not_change_while_the_request_runs(toy):
    """Sized from the request's limits alone: resizing the live states mid-run gives what admission reserved."""
    engine = Engine(toy)
    handle = engine.submit(SpeakRequest("Hello there, how are you", mode="chat", seed=1))
    wired = engine.inspect(handle.request_id)
    for _ in range(12):
        engine.step()
    assert wired.states[0][1].step > 0 and wired.states[1][1].step > 0  # thinker and talker ran
    assert size_request(wired.states, toy.upstream) == wired.footprint
    assert engine.budget.reserved >= wired.footprint.resident_bytes
    engine.close()
