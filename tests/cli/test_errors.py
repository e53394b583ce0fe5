"""Bad input: exit status 2 (usage) or 1 (runtime), exactly one `omni: error:` line, never a traceback."""

from __future__ import annotations

import pytest
from cli_helpers import stderr_lines

BAD_USAGE = [
    ["speak", "x", "--bogus"],
    ["speak", "   "],
    ["speak", ""],
    ["speak", "x", "--voice", "nope"],
    ["speak", "x", "--mode", "sing"],
    ["speak", "x", "--handoff", "later"],
    ["speak", "x", "--policy", "random"],
    ["speak", "x", "--seed", "-1"],
    ["speak", "x", "--concurrency", "0"],
    ["speak", "x", "--max-tokens", "zero"],
    ["speak", "x", "--card", "nope"],
    ["speak", "x", "--card", "missing.yaml"],
    ["speak", "x", "--program", "nope"],
    ["speak", "x", "--model-path", "/tmp"],
    ["speak", "x", "--device", "cuda"],
    ["speak", "x", "-o", "a.wav", "--out-dir", "d"],
    ["speak", "x", "-o", "-", "--json"],
    ["speak", "x", "-o", "-", "--format", "flac"],
    ["speak", "x" * 2001, "-o", "long.wav"],
    ["speak", "x", "-o", "a.m4a"],
    ["bench", "--reference", "--no-processes"],  # the numpy card: generate needs an hf one
    ["trace", "export", "t.jsonl"],
    ["trace", "show"],
    ["cards", "show", "nope"],
    ["programs", "show", "nope"],
    ["nosuchcommand"],
]


@pytest.mark.parametrize("args", BAD_USAGE, ids=lambda a: " ".join(a)[:40])
def test_bad_arguments_exit_2_with_one_line(omni, home, args):
    result = omni(*args)
    lines = stderr_lines(result.stderr)
    assert result.exit_code == 2, result.stderr
    assert len(lines) == 1 and lines[0].startswith("omni: error: "), lines
    assert "Traceback" not in result.stderr and result.stdout == ""
    assert not (home / "long.wav").exists()  # text is checked before any file is made


def test_unknown_voice_lists_the_known_ones(omni):
    line = omni("speak", "x", "--voice", "nope").stderr.strip()
    assert line == "omni: error: --voice: unknown voice 'nope' (known: alto, tenor)"


def test_numpy_card_refuses_hf_settings_naming_them(omni):
    line = omni("speak", "x", "--model-path", "/m", "--dtype", "bfloat16").stderr.strip()
    assert line.startswith("omni: error: --model-path, --dtype: only for cards on the hf backend")


def test_bench_reference_on_a_numpy_card_says_it_needs_an_hf_card(omni):
    line = omni("bench", "--reference", "--no-processes").stderr.strip()
    assert line.startswith("omni: error: Invalid value for --reference: compares with Hugging Face generate, "
                           "so it needs an hf card, not 'qwen2_5_omni_toy'")


@pytest.mark.parametrize("target", ["missing/dir/a.wav", "file/a.wav", "file/"])
def test_unwritable_output_exits_1_with_one_line(omni, home, target):
    (home / "file").write_text("not a directory")
    result = omni("speak", "x", "-o", target)
    assert result.exit_code == 1
    lines = stderr_lines(result.stderr)
    assert len(lines) == 1 and lines[0].startswith("omni: error: cannot "), lines


def test_unwritable_trace_exits_1(omni, home):
    result = omni("speak", "x", "--trace", "missing/t.jsonl")
    assert result.exit_code == 1 and stderr_lines(result.stderr) == [
        "omni: error: cannot write missing/t.jsonl: No such file or directory"]


def test_no_text_on_a_terminal_is_a_usage_error(omni, monkeypatch):
    import sys

    class Tty:
        def isatty(self):
            return True

    monkeypatch.setattr(sys, "stdin", Tty())
    from omni_cli.cli.errors import CliError
    from omni_cli.cli.job import resolve_text

    with pytest.raises(CliError, match="no text given"):
        resolve_text(None)


def test_debug_is_taken_from_anywhere_before_a_double_dash():
    from omni_cli.cli.app import pop_debug

    argv = ["speak", "--debug", "x", "--", "--debug"]
    assert pop_debug(argv) and argv == ["speak", "x", "--", "--debug"]


def test_an_internal_error_is_one_line_and_debug_shows_the_traceback(omni, monkeypatch):
    from omni_cli.cli import session

    def broken(options, on_load=None):
        raise ZeroDivisionError("boom")

    monkeypatch.setattr(session, "open_engine", broken)
    monkeypatch.setattr("omni_cli.cli.job.open_engine", broken)
    result = omni("speak", "x")
    assert result.exit_code == 1
    assert stderr_lines(result.stderr) == [
        "omni: error: internal error: ZeroDivisionError: boom (run with --debug for the traceback)"]
    debug = omni("speak", "x", "--debug")
    assert "Traceback" in debug.stderr and debug.exit_code == 1


def test_disk_full_mid_run_exits_1_and_keeps_the_chunks_before_it(omni, home, monkeypatch, solo):
    import errno

    from cli_helpers import read_wav

    from omni_cli.audio import AudioOutputError, WavFileWriter

    real = WavFileWriter._write_pcm
    calls = []

    def filling(self, pcm):
        calls.append(pcm.shape[0])
        if len(calls) == 3:
            raise AudioOutputError(self.target_name, "No space left on device", errno.ENOSPC)
        real(self, pcm)

    monkeypatch.setattr(WavFileWriter, "_write_pcm", filling)
    result = omni("speak", "Hello, world", "-o", "a.wav", "-q")
    assert result.exit_code == 1
    assert stderr_lines(result.stderr) == ["omni: error: cannot write a.wav: No space left on device"]
    _, samples = read_wav(home / "a.wav")
    assert samples.size == sum(calls[:2]) and (solo("Hello, world")[: samples.size] == samples).all()


def test_a_full_device_is_one_line(omni):
    result = omni("speak", "x", "-o", "/dev/full", "--format", "wav")
    assert result.exit_code == 1
    assert stderr_lines(result.stderr) == ["omni: error: cannot write /dev/full: No space left on device"]
