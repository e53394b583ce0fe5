"""Issue 12: text from a card, a program or a trace reaches the terminal inert: no markup, no escape sequences."""

from __future__ import annotations

from pathlib import Path

from cli_helpers import stderr_lines

ROOT = Path(__file__).resolve().parents[2]
EVIL = r"\e]0;owned\a\e[31m[/oops][link=https://x]"  # YAML double-quoted escapes: ESC, BEL
SHOWN = "\\x1b]0;owned\\x07\\x1b[31m[/oops][link=https://x]"


def evil_card(home) -> Path:
    text = (ROOT / "cards" / "qwen2_5_omni_toy.yaml").read_text()
    description = next(line for line in text.splitlines() if line.startswith("description:"))
    path = home / "evil.yaml"
    path.write_text(text.replace(description, f'description: "{EVIL}"'))
    return path


def test_cards_show_prints_a_description_with_escapes_inert(omni, home):
    result = omni("cards", "show", evil_card(home))
    assert result.exit_code == 0, result.stderr
    assert "\x1b" not in result.stdout and "\x07" not in result.stdout and SHOWN in result.stdout


def test_validate_and_error_lines_quote_file_text_inert(omni, home):
    path = evil_card(home)
    path.write_text(path.read_text() + f'"{EVIL}": 1\n')  # an unknown key made of escapes
    result = omni("cards", "validate", path)
    assert result.exit_code == 2 and "\x1b" not in result.stderr and "\x07" not in result.stderr
    assert SHOWN in result.stderr
    result = omni("speak", "x", "--card", path)
    assert result.exit_code == 2 and "\x1b" not in result.stderr and len(stderr_lines(result.stderr)) == 1


def test_names_that_reach_the_live_view_are_plain_words(omni, home):
    text = (ROOT / "cards" / "qwen2_5_omni_toy.yaml").read_text()
    path = home / "names.yaml"
    path.write_text(text.replace("  vocoder:\n    kind:", f'  "{EVIL}":\n    kind:'))  # a loop named with escapes
    result = omni("cards", "validate", path)
    assert result.exit_code == 2 and "\x1b" not in result.stderr
    assert f"loops.{SHOWN}: a name is letters, digits, _ . -" in result.stderr
