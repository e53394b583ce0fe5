"""Lists fit the terminal: `cards list`, `programs list` and `cards show --params` at 40 to 140 columns."""

from __future__ import annotations

import pytest

from omni_cli.cli.fit import fit_columns, labelled_line

ROWS = [("short", "a", "a last cell that is long enough to need wrapping on a narrow terminal, surely"),
        ("a.much.longer.first.cell", "bb", "brief")]


def words(lines: list[str]) -> list[str]:
    return " ".join(lines).split()


@pytest.mark.parametrize("width", [30, 50, 80, 200])
def test_every_line_fits_and_no_word_is_lost_or_reordered(width):
    lines = fit_columns(ROWS, width)
    assert all(len(line) <= width for line in lines), lines
    assert words(lines) == words([" ".join(row) for row in ROWS])


def test_without_a_width_each_row_is_one_line():
    assert fit_columns(ROWS, None) == [
        "short                     a   a last cell that is long enough to need wrapping on a narrow terminal, surely",
        "a.much.longer.first.cell  bb  brief",
    ]


def test_a_narrow_table_is_blocks_throughout_never_half_and_half():
    lines = fit_columns(ROWS, 40)
    assert lines[0] == "short" and "a.much.longer.first.cell" in lines
    assert all(line.startswith("    ") for line in lines if line not in ("short", "a.much.longer.first.cell"))


def test_a_wide_enough_table_wraps_its_last_column_under_itself():
    lines = fit_columns(ROWS, 60)
    lead = len("a.much.longer.first.cell  bb  ")
    assert lines[0].startswith("short") and lines[0][lead:].startswith("a last cell")
    assert lines[1].startswith(" " * lead) and len(lines) > len(ROWS)


@pytest.mark.parametrize("width", [40, 60, 80, 140])
@pytest.mark.parametrize("args", [("cards", "list"), ("programs", "list"),
                                  ("cards", "show", "qwen2_5_omni", "--params"),
                                  ("cards", "show", "qwen2_5_omni_toy", "--params")])
def test_the_catalog_commands_fit(omni, monkeypatch, width, args):
    monkeypatch.setenv("COLUMNS", str(width))
    result = omni(*args)
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    if "--params" in args:
        assert lines[1].startswith("keys it may set")
        lines = lines[1:]  # the first names the card's file: a path is not wrapped
    assert lines and all(len(line) <= width for line in lines), [line for line in lines if len(line) > width]


HELP_PAGES = [(), ("speak",), ("trace",), ("trace", "show"), ("trace", "export"), ("bench",), ("serve",),
              ("rollout",), ("rollout", "score"), ("cards", "show"), ("cards", "validate"), ("programs", "show")]


@pytest.mark.parametrize("command", HELP_PAGES, ids=[" ".join(c) or "omni" for c in HELP_PAGES])
def test_every_help_page_fits_80_columns(omni, monkeypatch, command):
    monkeypatch.setenv("COLUMNS", "80")
    result = omni(*command, "--help")
    assert result.exit_code == 0, result.stderr
    assert [line for line in result.stdout.splitlines() if len(line) > 80] == []


def test_column_groups_keep_a_table_whole_when_it_fits_and_split_it_when_not():
    from omni_cli.cli.fit import column_groups

    widths = [13, 8, 8, 11, 16, 14]  # the first column leads every table
    assert column_groups(widths, None) == [[1, 2, 3, 4, 5]]
    whole = widths[0] + 4 + sum(w + 3 for w in widths[1:])
    assert column_groups(widths, whole) == [[1, 2, 3, 4, 5]]
    groups = column_groups(widths, whole - 1)
    assert [i for g in groups for i in g] == [1, 2, 3, 4, 5] and len(groups) == 2
    for g in groups:
        assert widths[0] + 4 + sum(widths[i] + 3 for i in g) <= whole - 1


@pytest.mark.parametrize("width", [60, 80])
def test_cards_show_wraps_its_long_lines_on_a_terminal_and_keeps_them_whole_to_a_pipe(omni, monkeypatch, width):
    monkeypatch.delenv("COLUMNS", raising=False)
    piped = omni("cards", "show", "qwen2_5_omni").stdout.splitlines()
    assert max(len(line) for line in piped) > 100  # the vocoder's params: one line each to a pipe
    monkeypatch.setenv("COLUMNS", str(width))
    shown = omni("cards", "show", "qwen2_5_omni").stdout.splitlines()
    assert all(len(line) <= width for line in shown), shown
    assert words(shown) == words(piped)
    loops = shown.index("loops:")
    assert shown[loops + 1].startswith("  thinker_decode:") and shown[loops + 2].startswith("      ")  # wrapped, indented


THREADS = ("intra-op threads: thinker 1 (default), talker 1 (default), vocoder 1 (default), rows split over 2; "
           "generate 1, and 2 beside the concurrent run")


@pytest.mark.parametrize("width", [50, 80, 120])
def test_a_labelled_line_wraps_under_its_text_and_keeps_every_word(width):
    lines = labelled_line(THREADS, width).splitlines()
    assert len(lines) > 1 and all(len(line) <= width for line in lines), lines
    assert lines[0].startswith("intra-op threads: thinker")
    assert all(line.startswith(" " * len("intra-op threads: ")) and line[len("intra-op threads: ")] != " "
               for line in lines[1:])
    assert " ".join(lines).split() == THREADS.split()


def test_a_labelled_line_that_fits_or_goes_to_a_pipe_stays_one_line():
    assert labelled_line(THREADS, None) == THREADS
    assert labelled_line("placement: thinker inline (card)", 80) == "placement: thinker inline (card)"


def test_a_labelled_line_too_narrow_for_its_label_wraps_four_spaces_in():
    lines = labelled_line(THREADS, 40).splitlines()
    assert all(len(line) <= 40 and line.startswith("    ") and line[4] != " " for line in lines[1:]), lines
