"""`--set KEY=VALUE`: one of the card's values changed for one command, checked as the card's own values are."""

from __future__ import annotations

import json

import pytest

from omni_cli.api import load
from omni_cli.program import resolve
from omni_cli.spec import SpecError

SET_COMMANDS = [("speak",), ("trace", "run"), ("bench",), ("serve",), ("cards", "show"), ("cards", "validate")]


def test_a_set_value_reaches_the_compiled_program_and_the_file_stays_as_it_is():
    path = resolve("cards", "qwen2_5_omni_toy")
    before = path.read_bytes()
    program = load("qwen2_5_omni_toy", overrides={"loops.vocoder.chunk_codes": 4, "limits.max_text_chars": 50,
                                                    "placement.vocoder": {"executor": "thread"}})
    assert program.card.loops["vocoder"].chunk_codes == 4
    assert program.card.limits.max_text_chars == 50
    assert program.card.placement["vocoder"].executor == "thread"  # a mapping the card did not have
    assert path.read_bytes() == before
    assert load("qwen2_5_omni_toy").card.loops["vocoder"].chunk_codes == 10  # the card's own value, next time


def test_speak_runs_with_the_value_set(omni, tmp_path):
    runs = {}
    for label, extra in (("card", ()), ("set", ("--set", "loops.vocoder.chunk_codes=4"))):
        out = tmp_path / f"{label}.wav"
        result = omni("speak", "Hello there, how are you?", "-c", "qwen2_5_omni_toy", "-q", "--json", "-o", out, *extra)
        assert result.exit_code == 0, result.stderr
        runs[label] = json.loads(result.stdout)
    # the toy card's vocoder chunks are 10 codes: 4-code chunks are more vocoder WorkUnits for the same codes
    assert runs["set"]["num_samples"] == runs["card"]["num_samples"]
    assert runs["set"]["work_units"]["vocoder"] > runs["card"]["work_units"]["vocoder"]


@pytest.mark.parametrize("given, said", [
    ("loops.vocoder.chunk_codes=yes", "omni: error: --set: loops.vocoder.chunk_codes: expected integer, got true/false"),
    ("loops.vocoder.chunk_codez=4", "omni: error: --set: loops.vocoder.chunk_codez: unknown key (expected one of: "),
    ("chunk_codes", "omni: error: --set: expected KEY=VALUE with a dotted KEY"),
    ("loops.vocoder.chunk_codes=[4", "omni: error: --set: loops.vocoder.chunk_codes: '[4' is not a YAML value"),
    ("voices.first=Ethan", "omni: error: --set: voices.first: voices is a list in the card, not a mapping of keys"),
    ("components.vocoder.params={hidden: 2}", "omni: error: --set: components.vocoder.params.hidden: must be at least 4"),
])
def test_a_bad_value_is_one_line_naming_set_and_nothing_is_written(omni, tmp_path, given, said):
    out = tmp_path / "out.wav"
    result = omni("speak", "Hello.", "-c", "qwen2_5_omni_toy", "-o", out, "--set", given)
    assert result.exit_code == 2
    assert result.stderr.startswith(said), result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr
    assert not out.exists()


def test_an_issue_elsewhere_in_the_card_keeps_its_line(tmp_path):
    card = tmp_path / "card.yaml"
    text = resolve("cards", "qwen2_5_omni_toy").read_text(encoding="utf-8")
    card.write_text(text.replace("max_text_chars: ", "max_text_chars: -", 1), encoding="utf-8")
    with pytest.raises(SpecError) as caught:
        load(str(card), overrides={"loops.vocoder.chunk_codes": 0.5})
    where = {issue.key: (issue.file, issue.line) for issue in caught.value.issues}
    assert where["loops.vocoder.chunk_codes"] == ("--set", None)
    file, line = where["limits.max_text_chars"]
    assert file == str(card) and text.splitlines()[line - 1].lstrip().startswith("limits:")


@pytest.mark.parametrize("command", SET_COMMANDS, ids=[" ".join(c) for c in SET_COMMANDS])
def test_the_commands_that_run_a_card_take_set(omni, monkeypatch, command):
    monkeypatch.setenv("COLUMNS", "200")
    result = omni(*command, "--help")
    assert result.exit_code == 0, result.stderr
    assert "--set" in result.stdout and "KEY=VALUE" in result.stdout


def test_cards_show_and_validate_see_the_card_as_a_run_with_set_would(omni, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    shown = omni("cards", "show", "qwen2_5_omni", "--params", "--set", "components.vocoder.params.dit_compile=true")
    assert shown.exit_code == 0, shown.stderr
    row = next(line for line in shown.stdout.splitlines() if "components.vocoder.params.dit_compile" in line)
    assert row.split()[1] == "True"
    plain = omni("cards", "show", "qwen2_5_omni", "--params")
    assert next(line for line in plain.stdout.splitlines() if "params.dit_compile" in line).split()[1] == "False"
    assert omni("cards", "validate", "qwen2_5_omni", "--set", "loops.vocoder.chunk_codes=48").exit_code == 0
    refused = omni("cards", "validate", "qwen2_5_omni", "--set", "components.vocoder.params.dit_compile=maybe")
    assert refused.exit_code == 2
    assert refused.stderr.splitlines()[0] == ("--set: components.vocoder.params.dit_compile: expected true/false, "
                                              "got string")
