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
