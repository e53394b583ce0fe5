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
