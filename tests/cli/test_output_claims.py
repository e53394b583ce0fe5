"""Issue 12, data loss: every output is checked before any is touched, and two outputs never share a file."""

from __future__ import annotations

import os

import pytest
from cli_helpers import stderr_lines


@pytest.fixture()
def prior(home):
    """An existing WAV whose bytes must survive every refused run."""
    path = home / "prior.wav"
    path.write_bytes(b"RIFF-prior-audio" * 100)
    return path


def snapshot(root):
    return {str(p.relative_to(root)): (p.read_bytes() if p.is_file() else None)
            for p in sorted(root.rglob("*")) if "home" not in p.parts}


REFUSED = [  # (args, exit code, what the one error line starts with)
    (["-o", "prior.wav", "--force", "--trace", "no/dir/t.jsonl"], 1, "cannot write no/dir/t.jsonl"),
    (["-o", "prior.wav", "--force", "--trace", "/dev/full"], 1, "cannot write /dev/full: No space left"),
    (["-o", "prior.wav", "--force", "--trace", "prior.wav"], 2, "-o prior.wav and --trace prior.wav are the same"),
    (["-o", "prior.wav", "--force", "--trace", "./sub/../prior.wav"], 2, "-o prior.wav and --trace"),
    (["-o", "prior.wav", "--force", "--trace", "link.jsonl"], 2, "-o prior.wav and --trace link.jsonl are the same"),
    (["-o", "prior.wav", "--force", "--trace", "hard.jsonl"], 2, "-o prior.wav and --trace hard.jsonl are the same"),
    (["--out-dir", "td", "--trace", "td/0001.wav"], 2, "--trace td/0001.wav is one of the numbered files"),
    (["--out-dir", "new/a/b", "--trace", "/dev/full"], 1, "cannot write /dev/full"),
    (["--out-dir", "old", "--force", "--trace", "prior.wav"], 2, "--trace prior.wav is one of the numbered files"),
    (["-o", "new.wav", "--trace", "prior.wav"], 2, "prior.wav exists; pass --force"),
    (["-o", "prior.wav", "--trace", "new.jsonl"], 2, "prior.wav exists; pass --force"),
    (["-o", "fifo.wav"], 1, "cannot write fifo.wav: a FIFO with no reader"),
    (["--out-dir", "prior.wav", "--force"], 1, "cannot create prior.wav: it exists and is not a directory"),
    (["-o", "sub/x.jsonl/a.wav", "--force"], 1, "cannot write sub/x.jsonl/a.wav"),
]


@pytest.mark.parametrize("args,code,start", REFUSED, ids=lambda a: " ".join(a) if isinstance(a, list) else None)
def test_a_refused_run_changes_nothing_on_disk(omni, home, prior, args, code, start):
    (home / "sub").mkdir()
    (home / "old").mkdir()
    (home / "old" / "0001.wav").symlink_to(prior)
    (home / "link.jsonl").symlink_to(prior)
    os.link(prior, home / "hard.jsonl")
    os.mkfifo(home / "fifo.wav")
    (home / "sub" / "x.jsonl").write_text("keep")  # `-o sub` is a directory: its files are not ours
    before = snapshot(home)
    result = omni("speak", "new words", *args, "-q")
    lines = stderr_lines(result.stderr)
    assert result.exit_code == code and len(lines) == 1 and lines[0].startswith("omni: error: " + start), lines
    assert snapshot(home) == before


def test_a_trace_may_go_into_the_out_dir_it_creates(omni, home):
    result = omni("speak", "-", "--out-dir", "made/here", "--trace", "made/here/t.jsonl", "-q", input="One.\nTwo.\n")
    assert result.exit_code == 0, result.stderr
    assert sorted(p.name for p in (home / "made" / "here").iterdir()) == ["0001.wav", "0002.wav", "t.jsonl"]


def test_the_same_device_twice_is_allowed(omni):
    result = omni("speak", "x", "-o", "/dev/null", "--format", "wav", "--trace", "/dev/null", "-q")
    assert result.exit_code == 0, result.stderr


def test_a_fifo_with_a_reader_gets_a_streaming_wav(spawn, home):
    import threading

    os.mkfifo(home / "p.wav")
    got = {}
    reader = threading.Thread(target=lambda: got.setdefault("data", (home / "p.wav").read_bytes()))
    reader.start()
    p = spawn("speak", "Hello", "-o", "p.wav", "-q")
    assert p.wait(timeout=60) == 0, p.stderr.read()
    reader.join(timeout=10)
    from cli_helpers import parse_wav

    rate, samples = parse_wav(got["data"])  # unknown-length header, data to the end of the stream
    assert rate == 24000 and samples.size > 0


def test_an_output_that_fails_to_open_removes_what_the_run_made(omni, home, monkeypatch):
    from omni_cli.cli import trace_file
    from omni_cli.cli.errors import CliError

    def refuse(self, record):
        raise CliError(f"cannot write {self.path}: Input/output error", 1)

    monkeypatch.setattr(trace_file.TraceWriter, "write", refuse)
    for args in (["-o", "new.wav"], ["--out-dir", "made/dir"]):
        result = omni("speak", "x", *args, "--trace", "t.jsonl", "-q")
        assert result.exit_code == 1 and "cannot write t.jsonl" in result.stderr
        assert sorted(p.name for p in home.iterdir()) == ["home"]  # no WAV, no directory, no trace
