"""Validation reports every independent issue in one pass, and nothing that only follows from another (issue 18).

`omni cards validate` on a card with seven errors reported one: a wrong type hid an unknown key and a
mis-wired loop. Now the schema keeps what is valid (a broken entry is left out and recorded as dropped), the
rules between parts still run, and a rule that would only repeat an issue (a loop "naming an undeclared
component" that was left out for its own mistake) stays quiet.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from omni_cli.program import load_checked
from omni_cli.spec import SpecError

ROOT = Path(__file__).resolve().parent.parent
CORPUS = Path(__file__).resolve().parent / "bad_specs"
GOOD_CARD = ROOT / "cards" / "qwen2_5_omni_toy.yaml"
GOOD_PROGRAM = ROOT / "programs" / "speak.yaml"
CARD = GOOD_CARD.read_text()
PROGRAM = GOOD_PROGRAM.read_text()

# issue 18: a card with seven errors reported one. Every independent mistake, one of each family, in one pass
# (`load_checked`, what `omni cards validate` and `omni speak` run), in file order — and nothing that only
# follows from one of them (the loop left out for its missing key is not "undeclared" in the program).
MANY_MISTAKES: dict[str, list[tuple[int, str, str]]] = {
    "card_many_mistakes.yaml": [
        (5, "seed", "expected integer, got string"),  # wrong type
        (7, "sample_rate", "duplicate key"),  # YAML the safe loader would take silently
        (8, "voices.1", "duplicate voice 'alto'"),
        (14, "components.thinker.params.num_layers", "expected integer, got string"),  # the backend's params
        (33, "loops.talker_decode.component", "names undeclared component 'talkr' (components: thinker, talker"),
        (35, "loops.talker_decode.max_token", "unknown key (expected one of: chunk_codes, component, first_audio_codes"),
        (36, "loops.vocoder.prompt_slot", "missing required key"),
        (41, "defaults.program", "unknown program 'speek' (shipped: chat, chat_frames, speak"),  # a bad program reference
        (43, "batching.max_batch", "must be at least 1, got 0"),  # out of range
    ],
    "program_many_mistakes.yaml": [
        (2, "description", "missing required key"),
        (6, "nodes.0.inputs", "expected list of string, got string"),
        (7, "nodes.1.colour", "unknown key"),
        (8, "nodes.2.op", "unknown op 'print_text'"),
        (9, "nodes.3.id", "duplicate node id 'thinker'"),
        (11, "nodes.5.mode", "expected 'barrier' | 'stream' or null, got string"),
        (12, "nodes.6.loop", "has no loop 'beam_decode'"),
        (14, "nodes.8", "a second 'emit_audio' node"),
    ],
}




@pytest.mark.parametrize("name", sorted(MANY_MISTAKES))
def test_every_independent_mistake_is_reported_in_one_pass(name: str):
    path = CORPUS / ("cards" if name.startswith("card_") else "programs") / name
    with pytest.raises(SpecError) as info:
        load_checked(*((str(path),) if name.startswith("card_") else (str(GOOD_CARD), str(path))))
    found = [(issue.file, issue.line, issue.key) for issue in info.value.issues]
    assert found == [(str(path), line, key) for line, key, _ in MANY_MISTAKES[name]], "\n".join(map(str, info.value.issues))
    for issue, (_, _, message) in zip(info.value.issues, MANY_MISTAKES[name], strict=True):
        assert message in issue.message, str(issue)
    assert str(info.value).endswith(f"(and {len(found) - 1} more errors)")


def issues_of(tmp_path: Path, card: str = CARD, program: str = PROGRAM) -> list[tuple[str, int | None, str]]:
    """(file name, line, key) of every issue `load_checked` finds in this card and program; [] when valid."""
    (tmp_path / "card.yaml").write_text(card)
    (tmp_path / "program.yaml").write_text(program)
    try:
        load_checked(str(tmp_path / "card.yaml"), str(tmp_path / "program.yaml"))
    except SpecError as exc:
        return [(Path(i.file).name, i.line, i.key) for i in exc.issues]
    return []


def line_of(text: str, needle: str) -> int:
    return text[: text.index(needle)].count("\n") + 1


def edit(text: str, old: str, new: str) -> str:
    assert old in text, old
    return text.replace(old, new)


def test_the_good_pair_has_no_issue(tmp_path: Path):
    assert issues_of(tmp_path) == []


def test_a_component_left_out_for_its_own_mistake_is_not_undeclared(tmp_path: Path):
    card = edit(CARD, "    role: talker\n", "    role: 5\n")
    # not "loops.talker_decode.component names undeclared component", not "text_to_speech needs ... a talker",
    # and the program's talker node is not judged against a loop that drives nothing
    assert issues_of(tmp_path, card) == [("card.yaml", line_of(card, "role: 5"), "components.talker.role")]


def test_a_loop_left_out_for_its_own_mistake_is_not_missing_from_the_card(tmp_path: Path):
    card = edit(CARD, "    max_tokens: 16384\n", "    max_tokens: many\n")
    # not "components.talker: no loop drives this component", not the program's "card has no loop 'talker_decode'"
    assert issues_of(tmp_path, card) == [("card.yaml", line_of(card, "max_tokens: many"), "loops.talker_decode.max_tokens")]


def test_a_section_of_the_wrong_type_is_one_issue(tmp_path: Path):
    start, end = CARD.index("components:\n"), CARD.index("loops:\n")
    card = CARD[:start] + "components: [thinker, talker, vocoder]\n\n" + CARD[end:]
    assert issues_of(tmp_path, card) == [("card.yaml", line_of(card, "components:"), "components")]


def test_duplicate_voices_are_an_error(tmp_path: Path):
    card = edit(CARD, "voices: [alto, tenor]", "voices: [alto, tenor, alto]")
    assert issues_of(tmp_path, card) == [("card.yaml", line_of(card, "voices:"), "voices.2")]


def test_a_duplicate_key_does_not_hide_the_rest_of_the_file(tmp_path: Path):
    card = edit(CARD, "seed: 20251\n", "seed: 20251\nseed: 7\n")
    card = edit(card, "batching: {max_batch: 16,", "batching: {max_batch: 16, policy: fifo,")
    assert issues_of(tmp_path, card) == [("card.yaml", line_of(card, "seed: 7"), "seed"),
                                         ("card.yaml", line_of(card, "policy:"), "batching.policy")]


def test_a_card_and_its_program_are_checked_together(tmp_path: Path):
    card = edit(CARD, "seed: 20251", "seed: -1")
    program = edit(PROGRAM, "op: emit_text,", "op: print_text,")
    assert issues_of(tmp_path, card, program) == [("card.yaml", line_of(card, "seed: -1"), "seed"),
                                                  ("program.yaml", line_of(program, "print_text"), "nodes.2.op")]


def test_a_node_left_out_for_its_own_mistake_still_produces_its_slot(tmp_path: Path):
    program = edit(PROGRAM, "inputs: [text], output: thinker_prompt", "inputs: text, output: thinker_prompt")
    # not "nodes.1.inputs.0: no node produces slot 'thinker_prompt'"
    assert issues_of(tmp_path, program=program) == [("program.yaml", line_of(program, "inputs: text"), "nodes.0.inputs")]


def test_a_loop_wired_wrong_is_one_issue(tmp_path: Path):
    card = edit(CARD, "    component: talker\n", "    component: thinker\n")
    # not "components.talker: no loop drives this component", not the program's slot kinds that follow from it
    assert issues_of(tmp_path, card) == [("card.yaml", line_of(card, "component: thinker\n    work_unit: ar_token\n"
                                                                     "    prompt_slot: talker"), "loops.talker_decode.component")]
