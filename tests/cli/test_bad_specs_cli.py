"""Every malformed card and program of the corpus, through the CLI: exit 2, file:line, never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

CORPUS = Path(__file__).resolve().parents[1] / "bad_specs"
CARDS = sorted((CORPUS / "cards").iterdir())
PROGRAMS = sorted((CORPUS / "programs").iterdir())


def lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


@pytest.mark.parametrize("path", CARDS + PROGRAMS, ids=lambda p: p.name)
def test_validate_prints_each_issue_with_its_file_and_exits_2(omni, path):
    kind = "cards" if path.parent.name == "cards" else "programs"
    result = omni(kind, "validate", path)
    assert result.exit_code == 2, result.stderr
    err = lines(result.stderr)
    assert "Traceback" not in result.stderr
    assert err[-1].startswith("omni: error: 1 of 1 ")
    assert err[:-1] and all(line.startswith(str(path)) for line in err[:-1]), err


@pytest.mark.parametrize("path", CARDS[::4] + PROGRAMS[::4], ids=lambda p: p.name)
def test_speak_with_a_bad_file_is_one_line_and_exit_2(omni, home, path):
    option = "--card" if path.parent.name == "cards" else "--program"
    result = omni("speak", option, path, "Hello", "-o", "x.wav")
    assert result.exit_code == 2
    err = lines(result.stderr)
    assert len(err) == 1 and err[0].startswith("omni: error: ") and "Traceback" not in result.stderr
    assert not (home / "x.wav").exists()  # nothing is created before the card and program are known good


def test_validate_prints_every_mistake_once_in_file_order_and_speak_the_first(omni, home):
    # issue 18: seven errors came out as one. tests/test_one_pass_validation.py checks each message; here the CLI
    # prints them all, one per line, in file order, and speak's one line is the first of them with the count
    path = CORPUS / "cards" / "card_many_mistakes.yaml"
    result = omni("cards", "validate", path)
    assert result.exit_code == 2 and "Traceback" not in result.stderr
    err = lines(result.stderr)
    expected = [(5, "seed"), (7, "sample_rate"), (8, "voices.1"), (14, "components.thinker.params.num_layers"),
                (33, "loops.talker_decode.component"), (35, "loops.talker_decode.max_token"),
                (36, "loops.vocoder.prompt_slot"), (41, "defaults.program"), (43, "batching.max_batch")]
    assert len(err) == len(expected) + 1 and err[-1] == "omni: error: 1 of 1 card invalid", err
    for line, (number, key) in zip(err, expected, strict=False):
        assert line.startswith(f"{path}:{number}: {key}: "), line
    spoken = omni("speak", "--card", path, "Hello", "-o", "x.wav")
    assert spoken.exit_code == 2
    said = lines(spoken.stderr)
    assert len(said) == 1 and said[0].startswith(f"omni: error: {err[0]} (and {len(expected) - 1} more errors)"), said
    assert not (home / "x.wav").exists()


def test_every_shipped_card_and_program_validates(omni):
    # with no --card, each program is checked against a shipped card that has what it requires: the sentence
    # program against the piper card, not the toy card that lacks sentence_speech (it exited 2 out of the box)
    for kind in ("cards", "programs"):
        result = omni(kind, "validate")
        assert result.exit_code == 0, result.stderr
        shipped = sorted((CORPUS.parents[1] / kind).glob("*.yaml"))
        assert lines(result.stdout) == [f"ok {path}" for path in shipped]
