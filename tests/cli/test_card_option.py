"""Every command that takes a card takes it the same way: `-c/--card NAME|PATH`."""

from __future__ import annotations

import pytest

COMMANDS = [("speak",), ("trace", "run"), ("bench",), ("serve",), ("rollout", "run"), ("programs", "validate")]


@pytest.mark.parametrize("command", COMMANDS, ids=[" ".join(c) for c in COMMANDS])
def test_the_card_option_has_its_short_form(omni, monkeypatch, command):
    monkeypatch.setenv("COLUMNS", "200")
    result = omni(*command, "--help")
    assert result.exit_code == 0, result.stderr
    assert "-c, --card" in result.stdout
