"""Issue 18, no silent empty results: a run that speaks nothing, or makes no audio, says so and leaves no
file it created; an utterance that ends with no audio is `no_audio` in --json and exits 1 unless
--allow-no-audio.

A talker that draws its end-of-speech code first (as the hf tiny checkpoint's random one can, see
README) is made here from the toy talker: every logit but EOS pushed down, and EOS allowed from the
first step.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from cli_helpers import read_wav, stderr_lines

CAP = 4 * 2000 + 4096  # the toy card's longest stdin line in bytes


@pytest.fixture()
def mute_talker(monkeypatch):
    """`mute_talker(requests)`: the toy talker ends at its first step for the prefills numbered in
    `requests` (1-based, in the order they run; None: every one)."""
    from omni_cli.backends.base import AR_PREFILL
    from omni_cli.backends.toy.talker import NumpyTalker

    real_run, real_bounds = NumpyTalker.run, NumpyTalker.codes_bounds
    state = {"prefills": 0, "mute": False, "which": None}

    def run(self, kind, inputs):
        if kind == AR_PREFILL:
            state["prefills"] += 1
            state["mute"] = state["which"] is None or state["prefills"] in state["which"]
        outputs = real_run(self, kind, inputs)
        if state["mute"]:
            for out in outputs:
                out.logits[:] = -30.0
                out.logits[self.eos_id] = 30.0
        return outputs

    def bounds(self, items):
        fewest, most = real_bounds(self, items)
        return (0 if state["mute"] else fewest), most

    monkeypatch.setattr(NumpyTalker, "run", run)
    monkeypatch.setattr(NumpyTalker, "codes_bounds", bounds)

    def choose(requests=None):
        state["which"] = None if requests is None else set(requests)

    return choose


@pytest.mark.parametrize("stdin", ["", "\n", "\n   \n\t\n"], ids=["empty", "one blank", "three blank"])
@pytest.mark.parametrize("out", [["-o", "x.wav"], ["-o", "out/"], ["--out-dir", "a/b"]], ids=["file", "dir", "dirs"])
def test_stdin_without_text_is_bad_input_and_leaves_nothing(omni, home, stdin, out):
    before = sorted(p.name for p in home.iterdir())
    result = omni("speak", "-", *out, "--trace", "t.jsonl", input=stdin)
    assert result.exit_code == 2
    blank = stdin.count("\n")
    expected = ("stdin was empty: nothing to speak" if not blank else
                f"stdin held no text to speak, only {blank} blank line{'s' if blank != 1 else ''}")
    assert stderr_lines(result.stderr) == [f"omni: error: {expected}"]
    assert sorted(p.name for p in home.iterdir()) == before  # no WAV, no directory, no trace


def test_an_over_limit_first_line_leaves_no_empty_wav(omni, home):
    result = omni("speak", "-", "-o", "x.wav", "-q", input="a" * (CAP + 1) + "\n")
    assert result.exit_code == 2 and "stdin line 1 is over" in result.stderr
    assert not (home / "x.wav").exists()


def test_an_over_limit_later_line_keeps_the_audio_before_it(omni, home, solo):
    result = omni("speak", "-", "-o", "x.wav", "-q", input="Fine.\n" + "a" * (CAP + 1) + "\n")
    assert result.exit_code == 2 and "stdin line 2 is over" in result.stderr
    assert np.array_equal(read_wav(home / "x.wav")[1], solo("Fine."))


@pytest.mark.parametrize("trace", ["/dev/full", "nodir/t.jsonl"])
def test_an_unwritable_trace_leaves_no_output_file(omni, home, trace):
    result = omni("speak", "Hello", "-o", "new.wav", "--trace", trace, "-q")
    assert result.exit_code == 1 and f"cannot write {trace}" in result.stderr
    assert not (home / "new.wav").exists()


def test_a_trace_that_fails_before_any_audio_leaves_no_output_file(omni, home, monkeypatch):
    import errno

    from omni_cli.cli.trace_file import TraceWriter

    class Full:
        def write(self, text):
            raise OSError(errno.ENOSPC, "No space left on device")

        def flush(self):
            pass

        def close(self):
            pass

    real = TraceWriter.write
    writes = []

    def filling(self, record):
        writes.append(record)
        if len(writes) == 3:  # the run record and one more went in; the disk is full now
            self._file.close()
            self._file = Full()
        real(self, record)

    monkeypatch.setattr(TraceWriter, "write", filling)
    result = omni("speak", "Hello", "-o", "new.wav", "--trace", "t.jsonl", "--json")
    assert result.exit_code == 1
    [record] = [json.loads(line) for line in result.stdout.splitlines()]
    assert (record["status"], record["reason"], record["num_samples"]) == ("stopped", "disk full", 0)
    assert "omni: stopped: disk full" in stderr_lines(result.stderr)
    assert "omni: removed new.wav: no audio was written to it" in stderr_lines(result.stderr)
    assert not (home / "new.wav").exists()
    assert stderr_lines(result.stderr)[-1] == "omni: error: cannot write t.jsonl: No space left on device"


def test_an_utterance_with_no_audio_exits_1_says_why_and_removes_its_file(omni, home, mute_talker):
    mute_talker()
    result = omni("speak", "Hello", "-o", "x.wav", "--json")
    assert result.exit_code == 1
    [record] = [json.loads(line) for line in result.stdout.splitlines()]
    assert record["status"] == "no_audio" and record["num_samples"] == 0
    assert "talker_decode eos after 1 WorkUnit;" in record["reason"]  # its prefill drew EOS
    lines = stderr_lines(result.stderr)
    assert lines[0].startswith("omni: 1 utterance (1 no audio): 0.00 s of audio")
    assert "omni: removed x.wav: no audio was written to it" in lines
    assert lines[-1] == f"omni: error: no audio: {record['reason']} (--allow-no-audio accepts it)"
    assert not (home / "x.wav").exists()


def test_allow_no_audio_exits_0_still_says_so_and_keeps_an_empty_wav(omni, home, mute_talker):
    mute_talker()
    result = omni("speak", "Hello", "-o", "x.wav", "--json", "--allow-no-audio")
    assert result.exit_code == 0
    [record] = [json.loads(line) for line in result.stdout.splitlines()]
    assert record["status"] == "no_audio" and record["reason"]
    assert f"omni: warning: no audio: {record['reason']}" in stderr_lines(result.stderr)
    assert read_wav(home / "x.wav")[1].size == 0  # what was accepted: a valid WAV of no samples


def test_quiet_still_names_the_missing_audio(omni, home, mute_talker):
    mute_talker()
    result = omni("speak", "Hello", "-o", "x.wav", "-q")
    assert result.exit_code == 1
    [line] = stderr_lines(result.stderr)
    assert line.startswith("omni: error: no audio: the request ended without a sample")


def test_in_an_out_dir_only_the_empty_utterance_loses_its_file(omni, home, solo, mute_talker):
    mute_talker(requests={2})
    result = omni("speak", "-", "-o", "out/", "--json", "-j", "1", input="One.\nTwo.\nThree.\n")
    assert result.exit_code == 1
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r["status"] for r in records] == ["finished", "no_audio", "finished"]
    assert [r["path"] for r in records] == ["out/0001.wav", None, "out/0003.wav"]
    assert sorted(p.name for p in (home / "out").iterdir()) == ["0001.wav", "0003.wav"]
    assert np.array_equal(read_wav(home / "out" / "0003.wav")[1], solo("Three."))
    lines = stderr_lines(result.stderr)
    assert "omni: removed out/0002.wav: no audio was written to it" in lines
    assert lines[-1].startswith("omni: error: line 2: no audio: ")


def test_an_out_dir_the_run_made_goes_when_no_line_made_audio(omni, home, mute_talker):
    mute_talker()
    result = omni("speak", "-", "-o", "made/", "--trace", "t.jsonl", "-q", input="One.\nTwo.\n")
    assert result.exit_code == 1 and len(stderr_lines(result.stderr)) == 2
    assert not (home / "made").exists()
    assert (home / "t.jsonl").stat().st_size > 0  # the trace stays: it shows why
