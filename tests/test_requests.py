"""Request text: what is spoken, what is refused, and how the limit is stated."""

from dataclasses import replace

import pytest
from runtime_helpers import run_alone

from omni_cli.spec import SpeakRequest, SpecError, clean_text


@pytest.mark.parametrize("text", ["", "   ", "\n\t\r", "\x00\x07\x1b"])
def test_empty_or_unspeakable_text_is_refused(text):
    with pytest.raises(SpecError, match="text is empty"):
        clean_text(text, 100)


def test_text_over_the_limit_names_the_limit():
    with pytest.raises(SpecError) as info:
        clean_text("x" * 101, 100)
    assert "101 characters, over the card's limit of 100" in str(info.value)
    assert "\n" not in str(info.value)


def test_control_characters_are_dropped_and_whitespace_folded():
    assert clean_text("a\tb\nc\x00d\x1b[31me\x7f  f", 100) == "a b cd[31me f"


def test_mixed_scripts_are_spoken_as_given(toy):
    text = "Hello, мир, 世界, مرحبا 👋"
    result = run_alone(toy, SpeakRequest(text, seed=1))
    assert result.text == text
    assert result.samples.size > 0


def test_an_unknown_voice_lists_the_known_ones(toy):
    from omni_cli.engine import Engine

    with pytest.raises(SpecError, match="unknown voice 'bass' \\(known: alto, tenor\\)"):
        Engine(toy).submit(SpeakRequest("Hi", voice="bass"))


def test_echo_text_longer_than_the_thinkers_max_tokens_is_refused_not_cut(toy):
    from dataclasses import replace

    from omni_cli.engine import Engine
    from omni_cli.program import compile_program

    card = toy.card
    loops = {**card.loops, "thinker_decode": replace(card.loops["thinker_decode"], max_tokens=20)}
    small = replace(card, loops=loops)
    small.located = card.located
    program = compile_program(small, toy.program)
    with pytest.raises(SpecError, match="the text is 30 tokens, over the thinker_decode loop's max_tokens of 20"):
        Engine(program).submit(SpeakRequest("x" * 30))
    assert run_alone(program, SpeakRequest("x" * 19)).text == "x" * 19  # 19 tokens + EOS fit


@pytest.mark.parametrize("fields, key", [
    ({"mode": "sing"}, "mode"), ({"handoff": "later"}, "handoff"), ({"seed": -1}, "seed"),
    ({"seed": 2**40}, "seed"), ({"max_tokens": 0}, "max_tokens"), ({"voice": ""}, "voice"),
    ({"request_id": ""}, "request_id"), ({"seed": True}, "seed"),
])
def test_a_bad_request_field_is_a_spec_error_naming_it(fields, key):
    with pytest.raises(SpecError) as info:
        SpeakRequest("hi", **fields)
    assert [issue.key for issue in info.value.issues] == [key]


def test_card_facts_the_components_also_know_must_agree(toy):
    from types import SimpleNamespace

    from omni_cli.program.compiler import check_one_source

    card = toy.card
    vocoder = SimpleNamespace(role="vocoder", sample_rate=24000)
    talker = SimpleNamespace(role="talker", voices=lambda: ["alto"])
    with pytest.raises(SpecError) as info:
        check_one_source(replace(card, sample_rate=16000, voices=["alto", "bass"]), {"v": vocoder, "t": talker})
    messages = {issue.key: issue.message for issue in info.value.issues}
    assert "makes 24000 Hz audio, not 16000" in messages["sample_rate"]
    assert "does not know 'bass'" in messages["voices"]
