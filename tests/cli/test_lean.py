"""`omni --help`, `--version` and `cards list` answered by the entry point from what the full CLI made (lean.py):
the same bytes as the typer app prints, kept only while what made them is unchanged."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from cli_helpers import proc_env

FULL = "import sys; sys.argv[0] = 'omni'; from omni_cli.cli.app import main; main()"  # the typer app, no lean path


def run(home, *args, full=False, env=None, **kwargs):
    command = [sys.executable, "-c", FULL] if full else [sys.executable, "-m", "omni_cli.cli"]
    environment = {**proc_env(home / "home"), "COLUMNS": "80", "OMNI_CLI_CACHE": str(home / "cache")}
    environment.pop("OMNI_CARD")  # the default card, as a user has it
    environment.update(env or {})
    kwargs = {"capture_output": True, **kwargs}
    return subprocess.run([*command, *args], cwd=home, env=environment, text=True, timeout=120, **kwargs)


def entries(home):
    folder = home / "cache" / "cli"
    return sorted(p for p in folder.iterdir() if not p.name.endswith(".sha256")) if folder.exists() else []


@pytest.mark.parametrize("args", [["--help"], ["-h"], ["--version"], ["cards", "list"]])
def test_the_lean_answer_is_the_full_clis_at_80_columns_before_and_after_it_is_kept(home, args):
    full = run(home, *args, full=True)
    first, kept = run(home, *args), run(home, *args)
    assert full.returncode == first.returncode == kept.returncode == 0
    assert full.stdout.strip() and full.stdout == first.stdout == kept.stdout
    assert first.stderr == kept.stderr == ""
    if args != ["--version"]:
        assert len(entries(home)) == 1  # made once, then read


def test_version_names_the_package_version(home):
    from omni_cli import __version__

    assert run(home, "--version").stdout == f"omni {__version__}\n"
    assert run(home, "--debug", "--version", full=True).stdout == f"omni {__version__}\n"


def test_an_edited_or_planted_entry_is_made_again_not_printed(home):
    expected = run(home, "--help", full=True).stdout
    run(home, "--help")
    (entry,) = entries(home)
    entry.write_text("Usage: omni [PLANTED]\n")  # its recorded digest no longer matches
    again = run(home, "--help")
    assert again.stdout == expected
    assert entry.read_text() == expected


def test_each_terminal_width_has_its_own_help(home):
    narrow, wide = run(home, "--help", env={"COLUMNS": "60"}), run(home, "--help")
    assert narrow.stdout == run(home, "--help", full=True, env={"COLUMNS": "60"}).stdout != wide.stdout
    assert len(entries(home)) == 2


def test_the_default_mark_follows_omni_card(home):
    run(home, "cards", "list")
    toy = run(home, "cards", "list", env={"OMNI_CARD": "qwen2_5_omni_toy"}).stdout
    assert "qwen2_5_omni_toy (default)" in toy and "piper_joe (default)" not in toy
    assert toy == run(home, "cards", "list", full=True, env={"OMNI_CARD": "qwen2_5_omni_toy"}).stdout


def test_kept_rows_are_made_again_when_a_card_file_changes(tmp_path, monkeypatch):
    from omni_cli.cli import lean

    monkeypatch.setenv("OMNI_CLI_CACHE", str(tmp_path / "cache"))
    cards = tmp_path / "cards"
    cards.mkdir()
    (cards / "a.yaml").write_text("a")
    made = []

    def card_rows():
        made.append(1)
        return [("NAME",), *[(p.stem,) for p in sorted(cards.iterdir())]], [cards]

    monkeypatch.setattr(lean, "card_rows", card_rows)
    assert lean.remembered_rows() == lean.remembered_rows() == [("NAME",), ("a",)] and len(made) == 1
    (cards / "b.yaml").write_text("b")  # a card added
    assert lean.remembered_rows() == [("NAME",), ("a",), ("b",)] and len(made) == 2
    (cards / "a.yaml").write_text("a, edited")  # a card edited (its size changes)
    lean.remembered_rows()
    assert len(made) == 3


def test_a_refused_cache_still_answers(home):
    loose = home / "loose"
    loose.mkdir()
    os.chmod(loose, 0o777)  # writable by others: refused, never used
    expected = run(home, "--help", full=True).stdout
    result = run(home, "--help", env={"OMNI_CLI_CACHE": str(loose)})
    assert (result.returncode, result.stdout, result.stderr) == (0, expected, "")
    assert list(loose.iterdir()) == []


@pytest.mark.parametrize("args", [["--help"], ["cards", "list"]])
def test_a_closed_stdout_is_141_and_quiet(home, args):
    run(home, *args)
    r, w = os.pipe()
    os.close(r)  # the reader left before a byte was written
    result = run(home, *args, stdout=w, capture_output=False, stderr=subprocess.PIPE)
    os.close(w)
    assert (result.returncode, result.stderr) == (141, "")


def test_other_arguments_go_to_the_full_cli(home):
    result = run(home, "cards", "list", "--bogus")
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr.startswith("omni: error: No such option: --bogus")
    assert entries(home) == []
