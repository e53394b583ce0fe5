"""Replicas on Ray (the run's local cluster) and in processes: one engine's bytes; a killed replica fails alone."""

from __future__ import annotations

import json
from functools import partial

import pytest
from test_placement_runs import deadline

from omni_cli.cli.session import ModelOptions, open_engine
from omni_cli.engine.executors import WorkerDied
from omni_cli.engine.replicas import start_replicas
from omni_cli.spec import SpeakRequest
from omni_cli.spec.stream import AudioChunk, RequestDone, RequestStatus

LINES = ["Hello, world.", "A somewhat longer sentence, to make the lengths ragged.", "Ünïcödé text.", "Short."]
TIMING = ("ttfa_s", "latency_s", "first_audio_after_line_s", "path")


@pytest.fixture()
def omni(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from omni_cli.cli.app import app

    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    return lambda *args, input=None: runner.invoke(app, list(args), input=input, catch_exceptions=False)


def test_ray_replicas_write_one_engine_s_files(ray_cluster, omni, tmp_path):
    text = "\n".join(LINES) + "\n"
    one = omni("speak", "-", "--out-dir", "one", "--json", "-q", input=text)
    with deadline(180):
        two = omni("speak", "-", "--out-dir", "two", "--json", "-q", "--replicas", "2", "--placement", "ray",
                   input=text)
    assert one.exit_code == 0 and two.exit_code == 0, (one.stderr, two.stderr)
    names = [f"{i:04d}.wav" for i in range(1, len(LINES) + 1)]
    for name in names:
        expected = (tmp_path / "one" / name).read_bytes()
        assert len(expected) > 44 and (tmp_path / "two" / name).read_bytes() == expected

    def records(out):
        return [{k: v for k, v in json.loads(x).items() if k not in TIMING} for x in out.splitlines()]

    assert records(two.stdout) == records(one.stdout)
    assert ray_cluster.is_initialized()  # the run joined the test's Ray and left it running


def start(kind: str, count: int):
    options = ModelOptions("qwen2_5_omni_toy", placement="inline")
    program = open_engine(options).program
    if kind == "ray":
        from omni_cli.engine.executors.ray import ensure_ray

        ray = ensure_ray(None, count)
        return start_replicas(program, partial(open_engine, options), count, policy="latency-first", ray=ray,
                              resources={"num_cpus": 1.0, "num_gpus": 0.0})
    return start_replicas(program, partial(open_engine, options), count, policy="latency-first")


@pytest.mark.parametrize("kind, died", [("process", "its worker process died"), ("ray", "its Ray actor died")])
def test_a_killed_replica_fails_its_requests_alone_and_nothing_hangs(request, kind, died):
    if kind == "ray":
        request.getfixturevalue("ray_cluster")
    pool = start(kind, 2)
    try:
        handles = [pool.submit(SpeakRequest(text, seed=i)) for i, text in enumerate(LINES)]
        assert sorted(h.replica for h in handles) == [0, 0, 1, 1]  # spread over both
        pool.kill(0)
        with deadline(120):
            events = list(pool.events())
        done = {e.request_id: e for e in events if isinstance(e, RequestDone)}
        assert set(done) == {h.request_id for h in handles}
        for h in handles:
            if h.replica == 0:
                assert done[h.request_id].status is RequestStatus.FAILED
                assert done[h.request_id].error.startswith(f"replica 1: {died}")
            else:
                assert done[h.request_id].status is RequestStatus.FINISHED, done[h.request_id].error
                assert any(isinstance(e, AudioChunk) and e.request_id == h.request_id for e in events)
        later = pool.submit(SpeakRequest("After the loss.", seed=9))  # the survivor takes the rest
        assert later.replica == 1
        with deadline(60):
            assert [e.status for e in pool.events() if isinstance(e, RequestDone)] == [RequestStatus.FINISHED]
        pool.kill(1)
        pool.submit(SpeakRequest("Nobody left.", seed=10))
        with deadline(60):
            list(pool.events())
        with pytest.raises(WorkerDied, match="no replica is left"):
            pool.submit(SpeakRequest("Nobody left.", seed=11))
    finally:
        with deadline(60):
            pool.close()
