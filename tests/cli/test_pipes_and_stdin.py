"""Issue 12: endless stdin lines are refused early; a closed stdout is 141 for every command, not 1."""

from __future__ import annotations

import os

import pytest
from cli_helpers import stderr_lines

CAP = 4 * 2000 + 4096  # the toy card's 2,000 characters in 4-byte UTF-8, plus the margin


def test_a_line_over_the_cap_is_refused_and_earlier_lines_keep_their_files(omni, home):
    result = omni("speak", "-", "--out-dir", "out", "-q", input="First.\n" + "a" * (CAP + 1))
    assert result.exit_code == 2
    assert stderr_lines(result.stderr) == [
        f"omni: error: stdin line 2 is over {CAP} bytes, more than the card's limit of 2000 characters can take; "
        "split it into lines"]
    assert sorted(p.name for p in (home / "out").iterdir()) == ["0001.wav"]


def test_a_line_at_the_cap_is_read_and_judged_by_the_text_limit(omni):
    result = omni("speak", "-", "-q", input="a" * CAP + "\n")
    assert result.exit_code == 2 and "over the card's limit of 2000" in result.stderr and "bytes" not in result.stderr


def test_endless_stdin_without_a_newline_ends_with_one_line(spawn):
    with open("/dev/zero", "rb") as zero:
        p = spawn("speak", "-", "-q", stdin=zero)
        code = p.wait(timeout=60)
    assert code == 2 and stderr_lines(p.stderr.read().decode()) == [
        f"omni: error: stdin line 1 is over {CAP} bytes, more than the card's limit of 2000 characters can take; "
        "split it into lines"]


def test_a_closed_stdin_is_a_usage_error(spawn):
    import subprocess

    p = spawn("speak", "-", stdin=subprocess.DEVNULL, preexec_fn=lambda: os.close(0))  # as `<&-`
    assert p.wait(timeout=60) == 2
    assert stderr_lines(p.stderr.read().decode()) == [
        "omni: error: stdin is closed: pass TEXT, or give `-` a pipe or a file to read"]


COMMANDS = [
    ["cards", "list"], ["cards", "show", "qwen2_5_omni_toy"], ["cards", "validate"],
    ["programs", "list"], ["programs", "show", "speak"], ["programs", "validate"],
    ["trace", "show", "t.jsonl"], ["trace", "export", "t.jsonl", "--chrome"], ["trace", "Hi"], ["speak", "Hi"],
]


@pytest.mark.slow
def test_every_command_exits_141_on_a_closed_stdout(spawn, omni, home):
    assert omni("speak", "Hi", "--trace", "t.jsonl", "-q").exit_code == 0
    codes = {}
    for args in COMMANDS:
        r, w = os.pipe()
        os.close(r)  # the reader is gone before omni writes a byte: every write is EPIPE
        p = spawn(*args, stdout=w)
        os.close(w)
        codes[" ".join(args)] = (p.wait(timeout=60), p.stderr.read().decode())
    assert {args: code for args, (code, _) in codes.items()} == {" ".join(args): 141 for args in COMMANDS}
    assert all("error" not in err and "Traceback" not in err for _, err in codes.values()), codes


@pytest.mark.parametrize("args", [["-o", ""], ["--trace", ""], ["--out-dir", ""], ["-p", ""], ["--program="],
                                  ["--card", ""], ["--trace="]])
def test_an_empty_option_value_is_a_usage_error_and_makes_no_file(omni, home, args):
    result = omni("speak", "hi", *args)
    lines = stderr_lines(result.stderr)
    assert result.exit_code == 2 and len(lines) == 1 and "internal error" not in lines[0], lines
    assert sorted(p.name for p in home.iterdir()) == ["home"]
