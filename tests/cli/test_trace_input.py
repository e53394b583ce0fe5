"""Issue 12: trace files are input. Wrongly shaped records are FILE:LINE and exit 2; whatever omni writes it reads."""

from __future__ import annotations

import json
import os
import re

import pytest
from cli_helpers import stderr_lines
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from omni_cli.cli.chrome import write_chrome
from omni_cli.cli.errors import USAGE, CliError
from omni_cli.cli.trace_digest import TraceDigest
from omni_cli.cli.trace_file import TraceWriter
from omni_cli.cli.trace_reader import iter_trace

UNIT = {"event": "work_unit", "request_id": "r1", "loop": "thinker_decode", "kind": "ar_token", "step": 0,
        "batch_size": 1, "start_s": 0.5, "dur_s": 0.001, "stage": 0}
REQUEST = {"event": "request", "request_id": "r1", "phase": "finished", "t_s": 0.6, "detail": {"audio_s": 1.0}}

BAD_LINES = [  # (line 2 of a trace, what the error says after FILE:2:)
    ({k: v for k, v in UNIT.items() if k != "dur_s"}, "work_unit record lacks `dur_s`"),
    ({**UNIT, "start_s": "0.5"}, "work_unit record's `start_s` must be a finite number"),
    ({**UNIT, "dur_s": None}, "work_unit record's `dur_s` must be a finite number"),
    ({**UNIT, "batch_size": 0}, "work_unit record's `batch_size` must be at least 1"),
    ({**UNIT, "step": True}, "work_unit record's `step` must be an integer"),
    ({**UNIT, "loop": ["x"]}, "work_unit record's `loop` must be a string"),
    ({**UNIT, "start_s": 1e300}, "work_unit record's `start_s` must be a finite number"),
    ({**REQUEST, "t_s": {}}, "request record's `t_s` must be a finite number"),
    ({**REQUEST, "detail": {"audio_s": -1}}, "request record's `detail.audio_s`"),
    ({**REQUEST, "detail": []}, "request record's `detail` must be dict"),
    ({"event": "run", "loops": [1]}, "run record's `loops` must be a list of strings"),
    ({"event": 3}, "not a trace record"),
    ([UNIT], "not a trace record"),
    ('{"event": "work_unit", "start_s": NaN}', "NaN is not a number a trace holds"),
    ('{"event": "request", "t_s": Infinity}', "Infinity is not a number a trace holds"),
    ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
    ({**REQUEST, "detail": {"a": [[[[[[[[[1]]]]]]]]]}}, "nested more than 8 levels"),
    ('{"event": "request", "t_s": ' + "9" * 5000 + "}", "Exceeds the limit"),
    ("not json", "not JSON"),
    (b"\xff\xfe", "not UTF-8"),
]


def write_lines(path, *lines) -> None:
    raw = [x if isinstance(x, bytes) else (x if isinstance(x, str) else json.dumps(x)).encode() for x in lines]
    path.write_bytes(b"\n".join(raw) + b"\n")


@pytest.mark.parametrize("line,message", BAD_LINES, ids=range(len(BAD_LINES)))
@pytest.mark.parametrize("command", [["show"], ["export", "--chrome"]])
def test_a_wrongly_shaped_record_is_file_line_and_exit_2(omni, home, line, message, command):
    write_lines(home / "t.jsonl", UNIT, line, UNIT)
    result = omni("trace", *command, "t.jsonl")
    assert result.exit_code == 2 and result.stdout == ""
    lines = stderr_lines(result.stderr)
    assert len(lines) == 1 and lines[0].startswith("omni: error: t.jsonl:2: ") and message in lines[0], lines


@pytest.mark.parametrize("path", ["/dev/zero", "/dev/urandom", "fifo", "."])
def test_devices_fifos_and_directories_are_refused_before_reading(omni, home, path):
    os.mkfifo(home / "fifo")  # nobody writes it: reading would wait forever
    result = omni("trace", "show", path)
    assert result.exit_code == 2 and stderr_lines(result.stderr) == [
        f"omni: error: {path}: {'a directory' if path == '.' else 'not a regular file'} (a trace is a file written "
        "by --trace)"]


def test_an_endless_line_is_refused_at_the_cap(omni, home):
    (home / "t.jsonl").write_bytes(b"\0" * (2 << 20))
    result = omni("trace", "show", "t.jsonl")
    assert result.exit_code == 2 and "t.jsonl:1: line is over 1048576 bytes" in result.stderr


def test_markup_and_escape_sequences_from_a_trace_reach_the_terminal_inert(omni, home):
    evil = "[/oops][link=https://x]\x1b]0;owned\x07\x1b[31m"
    write_lines(home / "t.jsonl", {"event": "run", "card": evil, "loops": [evil]}, {**UNIT, "loop": evil},
                {**UNIT, "kind": evil, "loop": evil})
    result = omni("trace", "show", "t.jsonl")
    assert result.exit_code == 0, result.stderr
    assert "\x1b" not in result.stdout and "\x07" not in result.stdout
    assert "[/oops][link=https://x]\\x1b]0;owned\\x07" in result.stdout  # shown as written, not interpreted


def read_back(path):
    return [record for _, record in iter_trace(str(path))]


def export(path) -> dict:
    import io

    out = io.StringIO()
    write_chrome(str(path), TraceDigest.of(iter_trace(str(path))), out)
    return json.loads(out.getvalue(), parse_constant=lambda name: pytest.fail(f"bare {name} in the export"))


TEXTS = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=40) | st.sampled_from(
    ["\u2028", "a\u2029b", "\x1c\x1d\x1e\x85", "\r", "é\u0301", "👩‍👩‍👧", "\ud800"])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=st.lists(TEXTS, min_size=1, max_size=4), cut=st.integers(min_value=0, max_value=10_000))
def test_whatever_omni_writes_it_reads_back_even_cut_anywhere(tmp_path, texts, cut):
    path = tmp_path / "t.jsonl"
    writer = TraceWriter(str(path), force=True)
    records = [{"event": "utterance", "request_id": f"r{i}", "index": i, "line": i, "text": t, "path": None}
               for i, t in enumerate(texts)]
    for record in records:
        writer.write(record)
    writer.close()
    assert read_back(path) == records  # every character, U+2028 and lone surrogates included
    data = path.read_bytes()
    path.write_bytes(data[: min(cut, len(data))])  # a run killed at any byte
    try:
        got = read_back(path)
    except CliError as exc:
        assert str(exc) == f"{path}: empty trace" and exc.code == USAGE
        got = []
    whole_lines = data[: min(cut, len(data))].count(b"\n")
    assert got == records[: len(got)] and len(got) >= whole_lines


FIELD_VALUES = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.floats(allow_nan=False), st.text(max_size=5),
                         st.lists(st.integers(), max_size=2), st.dictionaries(st.text(max_size=3), st.integers(), max_size=2))
RECORDS = st.sampled_from([UNIT, REQUEST, {"event": "run", "loops": ["a"]}, {**REQUEST, "phase": "submitted"}])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(base=st.lists(RECORDS, min_size=1, max_size=4), mutations=st.lists(
    st.tuples(st.integers(0, 3), st.sampled_from(sorted({*UNIT, *REQUEST})), st.one_of(st.just("DROP"), FIELD_VALUES)),
    max_size=3))
def test_any_mutated_trace_reads_or_is_refused_with_its_line(tmp_path, base, mutations):
    records = [dict(r) for r in base]
    for index, key, value in mutations:
        record = records[index % len(records)]
        if value == "DROP":
            record.pop(key, None)
        else:
            record[key] = value
    path = tmp_path / "t.jsonl"
    write_lines(path, *records)
    try:
        digest = TraceDigest.of(iter_trace(str(path)))
    except CliError as exc:
        assert exc.code == USAGE and re.match(rf"{re.escape(str(path))}:\d+: ", str(exc)), str(exc)
        return
    from rich.console import Console

    from omni_cli.cli.timeline import render

    render(digest, Console(file=open(os.devnull, "w"), width=80))  # noqa: SIM115 - closed with the process
    document = export(path)
    assert sum(e["ph"] == "X" and e["pid"] == 1 for e in document["traceEvents"]) == digest.num_units


def test_a_million_records_stream_in_bounded_memory(tmp_path):
    import tracemalloc

    path = tmp_path / "big.jsonl"
    line = (json.dumps(UNIT) + "\n").encode()
    with open(path, "wb") as f:
        f.write(line * 20_000)
    tracemalloc.start()
    digest = TraceDigest.of(iter_trace(str(path)))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert digest.num_units == 20_000
    assert peak < 20_000 * 60  # flat arrays (~18 bytes a WorkUnit), not a dict per record (~1.6 KB)
