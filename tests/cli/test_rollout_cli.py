"""`omni rollout` and `omni rollout score` as a person runs them: files, progress, verdicts, refusals."""

from __future__ import annotations

import json

import numpy as np

from omni_cli.rollout import load_run, save_sample


def test_rollout_then_score_reproduces_every_logprob(omni, home):
    (home / "prompts.txt").write_text('Hello there\n\n{"text": "Hi", "voice": "tenor"}\n', encoding="utf-8")
    run = omni("rollout", "prompts.txt", "--samples", "2", "--out", "runs/a", "--seed", "7")
    assert run.exit_code == 0, run.stderr
    assert run.stdout == ""  # progress is stderr's
    progress = run.stderr.splitlines()
    assert len(progress) == 5 and progress[-1] == "4 samples in runs/a/ (4 finished, 0 not)"
    assert all(line.startswith(f"[{i}/4] p000") for i, line in enumerate(progress[:4], start=1))
    names = sorted(p.name for p in (home / "runs/a").iterdir())
    assert names == ["p0001_s001.npz", "p0001_s001.wav", "p0001_s002.npz", "p0001_s002.wav",
                     "p0002_s001.npz", "p0002_s001.wav", "p0002_s002.npz", "p0002_s002.wav", "rollout.jsonl"]
    manifest = [json.loads(line) for line in (home / "runs/a/rollout.jsonl").read_text().splitlines()]
    assert sorted(m["seed"] for m in manifest) == [7, 8, 9, 10]
    scored = omni("rollout", "score", "runs/a", "--out", "runs/a-scored")
    assert scored.exit_code == 0, scored.stderr
    lines = scored.stdout.splitlines()
    assert len(lines) == 4 and all(line.endswith("bit-equal") for line in lines), lines
    again = load_run(home / "runs/a-scored")
    assert [s.meta["scored_with"]["card"] for s in again] == ["qwen2_5_omni_toy"] * 4


def test_score_fails_when_a_record_does_not_reproduce(omni, home):
    (home / "p.txt").write_text("Hello\n", encoding="utf-8")
    assert omni("rollout", "p.txt", "-k", "1", "-o", "out", "-q").exit_code == 0
    (sample,) = load_run(home / "out")
    column = sample.loops["talker_decode"]["logprob"]
    column[3] = np.nextafter(column[3], 0.0)  # one ulp off: bit-equality is the contract on this card
    save_sample(sample.path, sample)
    scored = omni("rollout", "score", "out")
    assert scored.exit_code == 1
    assert scored.stdout.splitlines()[0].startswith("p0001_s001") and "max |diff|" in scored.stdout
    assert scored.stderr == "omni: error: 1 of 1 samples re-scored outside the tolerance of 0\n"


def test_bad_input_is_one_line_and_writes_nothing(omni, home):
    (home / "bad.jsonl").write_text('{"text": "Hi"}\n{"text": "Yo", "pitch": 3}\n', encoding="utf-8")
    (home / "empty.txt").write_text("\n  \n", encoding="utf-8")
    (home / "voice.txt").write_text('{"text": "Yo", "voice": "bass"}\n', encoding="utf-8")
    cases = {
        ("missing.txt",): "missing.txt: No such file or directory",
        ("bad.jsonl",): "bad.jsonl:2: unknown field(s) pitch",
        ("empty.txt",): "empty.txt: no prompts",
        ("voice.txt",): "unknown voice 'bass'",
    }
    for args, message in cases.items():
        result = omni("rollout", *args, "--out", "out")
        assert result.exit_code == 2, (args, result.stderr)
        assert result.stderr.startswith("omni: error: ") and message in result.stderr
        assert len(result.stderr.splitlines()) == 1
    assert not (home / "out").exists() or not any((home / "out").iterdir())
    (home / "ok.txt").write_text("Hi\n", encoding="utf-8")
    assert omni("rollout", "ok.txt", "-k", "1", "-o", "out", "-q").exit_code == 0
    refused = omni("rollout", "ok.txt", "-k", "1", "-o", "out")
    assert refused.exit_code == 2 and "already holds a rollout (use --force" in refused.stderr
    nothing = omni("rollout", "score", "ok.txt")
    assert nothing.exit_code == 2 and nothing.stderr == "omni: error: ok.txt: not a directory\n"
