"""The shipped card and program: three loops over three disjoint experts, wired by explicit hand-offs."""

from omni_cli.program import OPS, list_files, load_card_file, load_program_file, resolve


def test_toy_card_declares_the_cascade():
    card = load_card_file("qwen2_5_omni_toy")
    assert card.model == "qwen2_5_omni_toy"
    assert "text_to_speech" in card.capabilities
    kinds = {name: loop.kind for name, loop in card.loops.items()}
    assert kinds == {"thinker_decode": "ar_decode", "talker_decode": "ar_decode", "vocoder": "audio_decode",
                     "audio_encode": "audio_encode", "image_encode": "image_encode"}  # the chat program's input towers
    assert sorted(loop.component for loop in card.loops.values()) == ["audio_encoder", "image_encoder", "talker",
                                                                       "thinker", "vocoder"]
    slots = [loop.prompt_slot for loop in card.loops.values()]
    assert len(set(slots)) == 5


def test_cards_resolve_by_name_model_name_and_path():
    path = resolve("cards", "qwen2_5_omni_toy")
    assert resolve("cards", "qwen2_5_omni_toy") == path
    assert load_card_file(str(path)).model == "qwen2_5_omni_toy"
    assert any(p.stem == "speak" for p in list_files("programs"))


def test_compiled_program_has_three_distinct_components_and_loop_kinds(toy):
    towers = ("audio_encoder", "image_encoder")  # the chat program's input towers
    comps = [c for c in toy.components.values() if c.role not in towers]
    assert len({id(c) for c in comps}) == 3
    assert sorted(c.role for c in comps) == ["talker", "thinker", "vocoder"]
    assert [type(loop).__name__ for loop in toy.loops.values()] == ["ARDecodeLoop", "ARDecodeLoop", "AudioDecodeLoop"]
    assert [loop.component.role for loop in toy.loops.values()] == ["thinker", "talker", "vocoder"]
    assert [loop.stage for loop in toy.loops.values()] == [0, 1, 2]


def test_program_names_registered_ops_and_explicit_handoffs():
    program = load_program_file("speak")
    ops = [n.op for n in program.nodes if n.op]
    assert all(op in OPS for op in ops)
    handoffs = [n for n in program.nodes if n.op and OPS[n.op].is_handoff]
    assert [n.op for n in handoffs] == ["thinker_to_talker", "talker_to_vocoder"]
    assert all(n.mode == "stream" for n in handoffs)


def test_a_card_variant_keeps_what_the_card_knows_of_its_file():
    from omni_cli.api import load

    card = load("qwen2_5_omni_toy").card
    variant = card.replaced(sample_rate=16000)
    assert (variant.sample_rate, card.sample_rate) == (16000, 24000)
    assert variant.source == card.source and variant.source.endswith("qwen2_5_omni_toy.yaml")
    assert variant.located is card.located and variant.dropped == card.dropped
    assert variant.line("loops") == card.line("loops") is not None
