"""No silent truncation (issue 12): a loop stopped at a cap marks the request; limits known early are checked early."""

from __future__ import annotations

from dataclasses import replace

import pytest

from omni_cli.engine import Engine
from omni_cli.program import compile_program
from omni_cli.spec import SpeakRequest, SpecError
from omni_cli.spec.stream import RequestDone, RequestStatus


def variant(toy, *, loops=None, params=None):
    card = toy.card
    new_loops = {**card.loops, **{k: replace(card.loops[k], **v) for k, v in (loops or {}).items()}}
    comps = {name: replace(c, params={**c.params, **(params or {}).get(name, {})}) for name, c in card.components.items()}
    out = card.replaced(loops=new_loops, components=comps)
    return compile_program(out, toy.program)


def done_of(program, request):
    engine = Engine(program)
    engine.submit(request)
    return next(e for e in engine.events() if isinstance(e, RequestDone))


def test_a_talker_capped_below_its_fewest_codes_is_marked_truncated(toy):
    # the toy talker suppresses EOS below 3 codes per reply token: a cap of 10 must cut it
    done = done_of(variant(toy, loops={"talker_decode": {"max_tokens": 10}}), SpeakRequest("Hello there", seed=1))
    assert done.status is RequestStatus.FINISHED
    assert done.metrics["truncated"] == {"talker_decode": "max_tokens"}
    assert done.metrics["stop_reasons"]["vocoder"] == "end"


def test_a_natural_end_is_not_truncation(toy):
    done = done_of(toy, SpeakRequest("Hello there", seed=1))
    assert done.metrics["truncated"] == {}
    assert done.metrics["stop_reasons"]["thinker_decode"] == "eos"  # echo: the forced reply ends on EOS


def test_a_prompt_over_the_thinkers_positions_is_refused_before_the_run(toy):
    small = variant(toy, params={"thinker": {"max_positions": 16}})
    with pytest.raises(SpecError, match="max_positions of 16"):
        Engine(small).submit(SpeakRequest("x" * 600))


def test_an_echo_reply_over_the_requests_max_tokens_is_refused(toy):
    with pytest.raises(SpecError, match="over the request's max_tokens of 5"):
        Engine(toy).submit(SpeakRequest("a longer sentence", max_tokens=5))
