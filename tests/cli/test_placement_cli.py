"""`--placement` and `--ray-address` on the command line: the same bytes as inline, bad values one line."""

from __future__ import annotations

import pytest

from omni_cli.cli.timeline import lanes
from omni_cli.cli.trace_digest import TraceDigest
from omni_cli.cli.trace_reader import iter_trace


def test_speak_in_worker_processes_writes_inline_s_bytes(omni, home):
    args = ["speak", "Hello there. How are you?", "--seed", "3", "-q"]
    assert omni(*args, "-o", "inline.wav").exit_code == 0
    placed = omni(*args, "-o", "process.wav", "--placement", "thinker=process,talker=thread,vocoder=process",
                  "--trace", "run.jsonl")
    assert placed.exit_code == 0, placed.stderr
    inline = (home / "inline.wav").read_bytes()
    assert len(inline) > 44 and (home / "process.wav").read_bytes() == inline
    drawn = lanes(TraceDigest.of(iter_trace(str(home / "run.jsonl"))), 80)
    assert sorted(drawn) == ["talker_decode", "thinker_decode", "vocoder"]  # one lane per component
    busy = [{col for col, kind in enumerate(row) if kind} for row in drawn.values()]
    assert set.intersection(*busy[:2]) or set.intersection(*busy[1:]), "no two lanes busy in the same column"


@pytest.mark.parametrize("args, message", [
    (["--placement", "threads"], "--placement: unknown executor 'threads' (known: inline, thread, process, ray)"),
    (["--placement", "speaker=ray"], "--placement: unknown component 'speaker'"),
    (["--ray-address", "auto"], "--ray-address: no component is placed on ray (add --placement ray)"),
    (["--placement", "ray", "--ray-address", "nowhere"], "--ray-address: expected auto or HOST:PORT, got 'nowhere'"),
])
def test_bad_placement_options_are_one_line_and_exit_2(omni, home, args, message):
    result = omni("speak", "Hi", "-o", "x.wav", *args)
    assert result.exit_code == 2, (result.exit_code, result.stderr)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and message in lines[0], result.stderr
    assert "Traceback" not in result.stderr and not (home / "x.wav").exists()
