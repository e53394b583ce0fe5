"""A client's usage (text tokens, codec tokens) comes from what the program declares: the loop whose stream an op
declared with `counts` reads (emit_text, the talker's hand-off to the vocoder), never from role names."""

from __future__ import annotations

from dataclasses import replace

from omni_cli.api import load
from omni_cli.program import compile_program
from omni_cli.program.ops import OPS


def test_the_ops_that_count_name_the_loops_they_read():
    assert {name: op.counts for name, op in OPS.items() if op.counts} == {
        "emit_text": "text_tokens", "talker_to_vocoder": "codec_tokens", "talker_frames_to_vocoder": "codec_tokens"}
    assert load("qwen2_5_omni_toy").counted_loops() == {"text_tokens": "thinker_decode", "codec_tokens": "talker_decode"}
    assert load("piper_joe").counted_loops() == {}  # a sentence voice bills no tokens


def test_a_loop_renamed_in_card_and_program_is_still_counted():
    toy = load("qwen2_5_omni_toy")
    card, program = toy.card, toy.program
    renamed = {"thinker_decode": "answer", "talker_decode": "codec"}
    loops = {renamed.get(name, name): loop for name, loop in card.loops.items()}
    nodes = [replace(node, loop=renamed.get(node.loop, node.loop)) for node in program.nodes]
    compiled = compile_program(card.replaced(loops=loops), replace(program, nodes=nodes))
    assert compiled.counted_loops() == {"text_tokens": "answer", "codec_tokens": "codec"}
