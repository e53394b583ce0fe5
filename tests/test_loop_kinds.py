"""The loop-kind registry: one place a kind is declared; the card check and the compiler read it."""

from __future__ import annotations

from dataclasses import replace

import pytest

from omni_cli.loops import LOOP_KINDS, ARChannel, ARDecodeLoop, AudioDecodeLoop, Loop, register_loop_kind
from omni_cli.loops.audio_encode import AudioEncodeLoop
from omni_cli.loops.frame_decode import FrameDecodeLoop
from omni_cli.loops.image_encode import ImageEncodeLoop
from omni_cli.loops.sentences import PhonemizeLoop, SentenceFramesLoop
from omni_cli.program import compile_program
from omni_cli.spec import SpecError


def test_the_shipped_kinds_are_registered_with_what_cards_and_programs_check():
    assert LOOP_KINDS == {"ar_decode": ARDecodeLoop, "audio_decode": AudioDecodeLoop, "phonemize": PhonemizeLoop,
                          "sentence_frames": SentenceFramesLoop, "frame_decode": FrameDecodeLoop,
                          "audio_encode": AudioEncodeLoop, "image_encode": ImageEncodeLoop}
    assert (ARDecodeLoop.work_unit, ARDecodeLoop.reads, ARDecodeLoop.makes) == ("ar_token", "ar_feed", "ar_stream")
    assert AudioDecodeLoop.roles == ("vocoder",)


def test_a_kind_must_declare_what_the_checks_read():
    class Half(Loop):
        kind = "half"

    with pytest.raises(TypeError, match="must declare 'work_unit'"):
        register_loop_kind(Half)
    assert "half" not in LOOP_KINDS


def test_a_registered_kind_is_what_a_card_may_name(toy):
    class Echoes(ARDecodeLoop):  # a new kind, registered in one place
        kind = "echo_decode"
        output = ARChannel

    card = toy.card
    loops = {**card.loops, "thinker_decode": replace(card.loops["thinker_decode"], kind="echo_decode", work_unit=None)}
    variant = card.replaced(loops=loops)
    with pytest.raises(SpecError, match="expected one of .*'ar_decode'.*, got 'echo_decode'"):
        compile_program(variant, toy.program)
    register_loop_kind(Echoes)
    try:
        compiled = compile_program(variant, toy.program)
        assert type(compiled.loops["thinker_decode"]) is Echoes
    finally:
        del LOOP_KINDS["echo_decode"]
