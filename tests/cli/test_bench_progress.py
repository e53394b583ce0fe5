"""`omni bench` says which configuration it is running, on stderr (issue 18: 30 s of silence)."""

from __future__ import annotations

import json
import subprocess
import sys

from cli_helpers import ROOT, proc_env


def test_bench_names_each_configuration_on_stderr_as_it_starts_and_keeps_stdout_for_figures(tmp_path):
    done = subprocess.run([sys.executable, "-m", "omni_cli.cli", "bench", "--requests", "2", "--concurrency", "2",
                           "--chars", "8", "--no-processes", "--json"], capture_output=True, text=True, cwd=ROOT,
                          env=proc_env(tmp_path), timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == [
        "omni: bench 1/5: stream (2 utterances of 8 characters, concurrency 1)",
        "omni: bench 2/5: stream-10x (2 utterances of 80 characters, concurrency 1)",
        "omni: bench 3/5: barrier (2 utterances of 8 characters, concurrency 1)",
        "omni: bench 4/5: concurrency-1 (2 utterances of 8 characters, concurrency 1)",
        "omni: bench 5/5: concurrency-2 (2 utterances of 8 characters, concurrency 2)",
    ]
    labels = [json.loads(line).get("label") for line in done.stdout.splitlines()]
    assert labels[:5] == ["stream", "stream-10x", "barrier", "concurrency-1", "concurrency-2"]


def _bench_tables(tmp_path, columns: str | None) -> str:
    env = proc_env(tmp_path)
    env.pop("COLUMNS", None)
    if columns is not None:
        env["COLUMNS"] = columns
    done = subprocess.run([sys.executable, "-m", "omni_cli.cli", "bench", "--requests", "1", "--concurrency", "2",
                           "--chars", "8", "--no-processes"], capture_output=True, text=True, cwd=ROOT, env=env,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_tables_fit_an_80_column_terminal_with_every_name_and_figure_whole(tmp_path):
    out = _bench_tables(tmp_path, "80")
    assert max(len(line) for line in out.splitlines()) <= 80, out
    assert "…" not in out, out  # rich cuts a cell it cannot fit with an ellipsis
    assert "workloads (1 of 2)" in out and "workloads (2 of 2)" in out
    workloads = out.split("targets (measured in this run)")[0]
    for label in ("stream", "stream-10x", "barrier", "concurrency-1", "concurrency-2"):
        assert workloads.count(f"│ {label} ") == 2, label  # each configuration leads a row of both tables
    for header in ("TTFA p50", "latency p50", "stall max", "audio s / wall s", "overhead µs/WU", "reserved MiB"):
        assert header in out, header


def test_a_pipe_gets_one_workloads_table(tmp_path):
    out = _bench_tables(tmp_path, None)
    assert "workloads (1 of" not in out and "overhead µs/WU" in out and "│ concurrency-2 " in out


def test_the_progress_lines_fit_a_narrow_terminal_and_stay_whole_into_a_pipe(tmp_path):
    env = proc_env(tmp_path) | {"COLUMNS": "50"}
    done = subprocess.run([sys.executable, "-m", "omni_cli.cli", "bench", "--requests", "2", "--concurrency", "2",
                           "--chars", "8", "--no-processes", "--json"], capture_output=True, text=True, cwd=ROOT,
                          env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert max(len(line) for line in lines) <= 50 and len(lines) > 5, done.stderr
    assert all(line.startswith(("omni: bench ", "      ")) for line in lines), done.stderr  # under "bench"
    assert " ".join(" ".join(lines).split()).startswith(
        "omni: bench 1/5: stream (2 utterances of 8 characters, concurrency 1) omni: bench 2/5:")
