"""The scripts in examples/ run as their docstrings say, and what they write is right."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import wave
from pathlib import Path

import numpy as np
import pytest

from omni_cli.api import load
from omni_cli.audio import float_to_pcm16
from omni_cli.engine import Engine
from omni_cli.spec import SpeakRequest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
# the `omni` script installed beside this interpreter, first on PATH
ENV = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}


def read_wav(path: Path) -> np.ndarray:
    with wave.open(str(path)) as wav:
        assert (wav.getframerate(), wav.getnchannels(), wav.getsampwidth()) == (24000, 1, 2)
        return np.frombuffer(wav.readframes(wav.getnframes()), dtype="<i2")


def test_speak_many_writes_each_request_as_if_spoken_alone(tmp_path):
    texts = ["Hello there.", "Good morning, how are you today?", "Hi."]
    done = subprocess.run([sys.executable, str(EXAMPLES / "speak_many.py"), str(tmp_path / "out"), *texts],
                          capture_output=True, text=True, env=ENV, timeout=120)
    assert done.returncode == 0, done.stderr
    assert sorted(line.split(":")[0] for line in done.stdout.splitlines()) == ["r1", "r2", "r3"]
    program = load("qwen2_5_omni_toy")
    for i, text in enumerate(texts, start=1):
        alone = Engine(program).submit(SpeakRequest(text, seed=i), collect=True).result().samples
        assert np.array_equal(read_wav(tmp_path / "out" / f"{i:04d}.wav"), float_to_pcm16(alone))


def test_pipeline_script_gives_a_file_and_a_json_line_per_input_line(tmp_path):
    done = subprocess.run(["bash", str(EXAMPLES / "pipeline.sh"), "out"], capture_output=True, text=True,
                          cwd=tmp_path, env=ENV, timeout=120)
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert [r["status"] for r in records] == ["finished"] * 3
    for r in records:
        assert read_wav(tmp_path / r["path"]).size == r["num_samples"] > 0
    assert (tmp_path / "out" / "trace.jsonl").stat().st_size > 0
    raw_bytes = int(done.stdout.split()[-1])  # the last line: bytes of raw s16le PCM through the pipe
    assert raw_bytes > 0 and raw_bytes % 2 == 0


def test_replicas_wall_runs_both_and_finds_the_same_files():
    done = subprocess.run([sys.executable, str(EXAMPLES / "replicas_wall.py"), "--lines", "4", "--rounds", "1"],
                          capture_output=True, text=True, env=ENV, timeout=180)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1].endswith("same files: yes"), done.stdout


def test_engine_parts_names_each_loop_kind_of_the_card_at_both_concurrencies():
    done = subprocess.run([sys.executable, str(EXAMPLES / "engine_parts.py")], capture_output=True, text=True,
                          env=ENV, timeout=300)
    assert done.returncode == 0, done.stderr
    kinds = sorted({type(loop).kind for loop in load("qwen2_5_omni_toy").loops.values()})
    blocks = done.stdout.split("concurrency ")[1:]
    assert [b.split(":")[0] for b in blocks] == ["1", "8"]
    for block in blocks:
        labels = [line.rsplit(None, 2)[0].strip() for line in block.splitlines()[1:]]
        assert labels == ["schedule (loop next() included)", *(f"{k}.next" for k in kinds),
                          *(f"{k}.advance_many" for k in kinds), "the rest (reserve, fold, events, stats)"]


def test_first_chunk_gaps_walks_each_position_from_submit_to_the_first_audio():
    done = subprocess.run([sys.executable, str(EXAMPLES / "first_chunk_gaps.py"), "1"], capture_output=True,
                          text=True, env=ENV, timeout=300)
    assert done.returncode == 0, done.stderr
    *rows, total = done.stdout.splitlines()
    assert [int(row.split()[0]) for row in rows] == list(range(len(rows)))  # one row per position, in order
    assert rows[0].split()[1] == "submit" and rows[-1].split("->")[1].split()[:2] == ["first", "audio"]
    assert rows[-2].split("->")[1].split()[0] == "vocoder#0"  # the path ends at the first vocoder chunk
    assert total.startswith("sum of the medians: ")


def test_memory_soak_prints_its_rows_and_refuses_a_bad_set_in_one_line():
    script = [sys.executable, str(EXAMPLES / "memory_soak.py")]
    done = subprocess.run([*script, "--utterances", "20", "--every", "10"], capture_output=True, text=True,
                          env=ENV, timeout=120)
    assert done.returncode == 0, done.stderr
    header, *rows = done.stdout.splitlines()
    assert header.split() == ["utterances", "rss_mib", "seconds"] and [r.split()[0] for r in rows] == ["10", "20"]
    for bad, says in (("loops.vocoder.chunk_codes=abc", "expected integer"), ("nope", "expected KEY=VALUE")):
        refused = subprocess.run([*script, "--utterances", "2", "--set", bad], capture_output=True, text=True,
                                 env=ENV, timeout=120)
        assert refused.returncode == 2 and refused.stdout == "", refused.stdout
        assert says in refused.stderr.splitlines()[-1] and "Traceback" not in refused.stderr, refused.stderr


@pytest.mark.slow
def test_bench_first_byte_measures_every_format_and_both_ways_of_sending_text():
    done = subprocess.run([sys.executable, str(EXAMPLES / "bench_first_byte.py"), "--rounds", "1", "--json"],
                          capture_output=True, text=True, env=ENV, timeout=300)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.splitlines()[-1])
    from omni_cli.audio.aac import aac_unavailable

    formats = {"wav", "pcm", "mp3", "opus", "flac"} | ({"aac"} if aac_unavailable() is None else set())
    assert set(result["ratio_to_library"]) == formats
    assert all(v > 0 for v in result["median_ms"].values()) and result["ws_streamed_to_whole"] > 0


@pytest.mark.slow
def test_serve_handovers_marks_every_step_of_a_request_and_the_bare_floor():
    done = subprocess.run([sys.executable, str(EXAMPLES / "serve_handovers.py"), "--requests", "1"],
                          capture_output=True, text=True, env=ENV, timeout=300)
    assert done.returncode == 0, done.stderr
    # every hook fired: a hook out of step with the server's signatures leaves its mark out
    marks = [line.split()[0] for line in done.stdout.splitlines()[1:8]]
    assert marks == ["1", "2", "3", "4", "5", "6", "7"], done.stdout
    assert "the floor of step 6" in done.stdout
