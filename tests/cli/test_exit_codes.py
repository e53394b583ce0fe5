"""The documented exit-status table (docs/reliability.md), row by row, each by a real invocation (issue 18: some bad input exited 1)."""

from __future__ import annotations

import os
import re
import signal

import pytest
from cli_helpers import LONG_TEXT, ROOT, stderr_lines

# (code, what the row means, argv, stdin): every row of the README's table has at least one invocation
CASES = [
    (0, "ok", ["speak", "Hi", "-o", "ok.wav", "-q"], None),
    (0, "ok", ["cards", "list"], None),
    (1, "runtime failure: the disk is full", ["speak", "Hi", "-o", "/dev/full"], None),
    (1, "runtime failure: an output in a missing directory", ["speak", "Hi", "-o", "nodir/x.wav"], None),
    (2, "bad usage: an unknown option", ["speak", "Hi", "--nope"], None),
    (2, "bad input: empty text", ["speak", "   "], None),
    (2, "bad input: an unknown card", ["speak", "Hi", "-c", "nocard"], None),
    (2, "bad input: an unknown voice", ["speak", "Hi", "--voice", "nobody"], None),
    (2, "bad input: a missing --model-path directory", ["speak", "Hi", "-c", "qwen2_5_omni", "--model-path", "nodir"],
     None),
    (2, "bad input: --model-path without a checkpoint", ["speak", "Hi", "-c", "qwen2_5_omni", "--model-path", "."],
     None),
    (2, "bad input: a missing trace file", ["trace", "show", "missing.jsonl"], None),
    (2, "bad input: a missing trace file to export", ["trace", "export", "missing.jsonl", "--chrome"], None),
    (2, "bad input: a missing card file", ["cards", "show", "./missing.yaml"], None),
    (2, "bad input: a stdin line that is not UTF-8", ["speak", "-", "-q"], b"\xff\n"),
    (2, "bad input: stdin with only blank lines", ["speak", "-", "-o", "blank.wav"], b"\n  \n"),
]


def readme_exit_codes() -> dict[int, str]:
    """The exit-status table of docs/reliability.md (the README links to it), status by status."""
    text = (ROOT / "docs" / "reliability.md").read_text(encoding="utf-8")
    table = text.split("## Exit status", 1)[1].split("\n## ", 1)[0]
    return {int(code): meaning for code, meaning in re.findall(r"^\| (\d+) \| (.+?) \|$", table, re.M)}


def test_every_exit_status_of_the_readme_is_checked_here():
    codes = readme_exit_codes()
    assert set(codes) == {0, 1, 2, 130, 141, 143}, codes
    assert {c for c, *_ in CASES} | {130, 141, 143} == set(codes)  # 130/141/143 by the signal tests below


@pytest.mark.parametrize(("code", "why", "args", "stdin"), CASES, ids=[c[1] for c in CASES])
def test_each_row_of_the_exit_status_table(spawn, home, code, why, args, stdin):
    import subprocess

    p = spawn(*args, stdin=subprocess.PIPE)
    out, err = p.communicate(stdin, timeout=120)
    lines = stderr_lines(err.decode())
    assert p.returncode == code, (why, lines)
    assert "Traceback" not in err.decode()
    if code:
        assert len(lines) == 1 and lines[0].startswith("omni: error: "), lines


def test_exit_141_when_the_reader_of_stdout_left(spawn):
    r, w = os.pipe()
    os.close(r)
    p = spawn("cards", "list", stdout=w)
    os.close(w)
    assert p.wait(timeout=60) == 141 and b"error" not in p.stderr.read()


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)], ids=["INT", "TERM"])
def test_exit_130_and_143_on_sigint_and_sigterm(spawn, home, signum, code):
    import time

    path = home / "long.wav"
    p = spawn("speak", LONG_TEXT, "-o", path.name, "-q")
    deadline = time.monotonic() + 120
    while (not path.exists() or path.stat().st_size < 50_000) and p.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    p.send_signal(signum)
    assert p.wait(timeout=120) == code
