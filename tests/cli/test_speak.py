"""`omni speak` in-process: files, stdout routing, stdin lines, overwrite policy (stdout and stderr apart)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from cli_helpers import parse_wav, read_wav, stderr_lines

HELLO = "Hello, world"


def made_by(program, text: str = HELLO) -> tuple[int, dict[str, int]]:
    """(samples, WorkUnits per loop) a text makes, from its decoded tokens and the card's declared sizes:
    one WorkUnit per token decoded, the codes before the talker's EOS in chunks of the card's chunk_codes,
    each code the vocoder's samples_per_code. No count read off the toy's random weights."""
    from omni_cli.engine import Engine
    from omni_cli.spec import SpeakRequest

    tokens = Engine(program).submit(SpeakRequest(text), collect=True).result().tokens
    codes = sum(1 for t in tokens["talker_decode"] if t not in program.roles["talker"].eos_token_ids)
    chunk = program.card.loops["vocoder"].chunk_codes
    units = {"thinker_decode": len(tokens["thinker_decode"]), "talker_decode": len(tokens["talker_decode"]),
             "vocoder": -(-codes // chunk)}
    return codes * program.roles["vocoder"].samples_per_code, units


def test_speak_writes_a_wav_of_the_expected_length(omni, home, solo, program):
    result = omni("speak", HELLO, "-o", "hello.wav")
    assert result.exit_code == 0, result.stderr
    rate, samples = read_wav(home / "hello.wav")
    expected = solo(HELLO)
    assert rate == 24000 and samples.size > 0 and samples.size % 480 == 0  # 480 samples per codec token
    assert np.array_equal(samples, expected)
    assert result.stdout == HELLO + "\n"  # the thinker's text: stdout carries no audio
    lines = stderr_lines(result.stderr)  # no TTY: a short summary, no escape codes
    assert samples.size == made_by(program)[0]
    assert lines[0].startswith(f"omni: 1 utterance: {samples.size / rate:.2f} s of audio") and "\x1b" not in result.stderr


def test_quiet_prints_nothing_on_stderr_and_verbose_one_line_per_work_unit(omni, home, program):
    assert omni("speak", HELLO, "-o", "a.wav", "-q").stderr == ""
    result = omni("speak", HELLO, "-o", "b.wav", "-v")
    units = [line for line in result.stderr.splitlines() if " ms x" in line]
    assert len(units) == sum(made_by(program)[1].values())  # thinker, talker, vocoder WorkUnits of this text


def test_seed_and_voice_change_the_audio(omni, home, solo):
    omni("speak", HELLO, "-o", "a.wav", "--seed", "7", "--voice", "tenor")
    assert np.array_equal(read_wav(home / "a.wav")[1], solo(HELLO, seed=7, voice="tenor"))
    assert not np.array_equal(solo(HELLO, seed=7, voice="tenor"), solo(HELLO))


def test_json_prints_one_object_per_utterance(omni, home, program):
    result = omni("speak", HELLO, "-o", "a.wav", "--json", "-q")
    record = json.loads(result.stdout)
    assert record["text"] == HELLO and record["path"] == "a.wav" and record["status"] == "finished"
    samples, units = made_by(program)
    assert record["duration_s"] == pytest.approx(samples / 24000) and record["ttfa_s"] > 0
    assert record["work_units"] == units


def test_stdout_carries_a_streaming_wav_with_dash(omni, solo):
    result = omni("speak", HELLO, "-o", "-", "-q")
    assert result.exit_code == 0 and result.stderr == ""
    rate, samples = parse_wav(result.stdout_bytes)  # unknown-length header, data to the end
    assert rate == 24000 and np.array_equal(samples, solo(HELLO))


def test_raw_pcm_to_stdout_and_to_a_file(omni, home, solo, program):
    expected = solo(HELLO).tobytes()
    assert omni("speak", HELLO, "-o", "-", "--format", "raw", "-q").stdout_bytes == expected
    omni("speak", HELLO, "-o", "a.raw")
    assert (home / "a.raw").read_bytes() == expected and len(expected) == 2 * made_by(program)[0]


def test_existing_files_are_kept_without_force(omni, home, program, monkeypatch):
    from omni_cli.cli import job

    loads = []
    opened = job.open_engine
    monkeypatch.setattr(job, "open_engine", lambda *a, **k: loads.append(a) or opened(*a, **k))
    (home / "a.wav").write_bytes(b"precious")
    result = omni("speak", HELLO, "-o", "a.wav")
    assert result.exit_code == 2 and result.stdout == ""
    assert stderr_lines(result.stderr) == ["omni: error: a.wav exists; pass --force to overwrite it"]
    assert loads == []  # refused before the model loads (a real checkpoint takes seconds to minutes)
    assert (home / "a.wav").read_bytes() == b"precious"
    assert (home / "a.wav").read_bytes() == b"precious"
    assert omni("speak", HELLO, "-o", "a.wav", "--force").exit_code == 0
    assert read_wav(home / "a.wav")[1].size == made_by(program)[0]


def test_out_dir_with_numbered_files_needs_force(omni, home):
    (home / "out").mkdir()
    (home / "out" / "0001.wav").write_bytes(b"x")
    result = omni("speak", "-", "-o", "out/", input="a\n")
    assert result.exit_code == 2 and "pass --force" in result.stderr
    assert omni("speak", "-", "-o", "out/", "--force", input="a\n").exit_code == 0


def test_stdin_lines_give_one_file_each_identical_to_the_line_alone(omni, home, solo):
    lines = ["One.", "", "Two, two.", "   ", "Three three three, héllo."]
    result = omni("speak", "--out-dir", "out", "--concurrency", "3", "--json", "-q", input="\n".join(lines) + "\n")
    assert result.exit_code == 0, result.stderr
    spoken = [t for t in lines if t.strip()]
    assert sorted(p.name for p in (home / "out").iterdir()) == ["0001.wav", "0002.wav", "0003.wav"]
    for i, text in enumerate(spoken, 1):
        assert np.array_equal(read_wav(home / "out" / f"{i:04d}.wav")[1], solo(text)), text
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r["text"] for r in records] == spoken and [r["line"] for r in records] == [1, 3, 5]
    assert [r["path"] for r in records] == [f"out/{i:04d}.wav" for i in (1, 2, 3)]


def test_no_text_with_a_pipe_on_stdin_reads_lines(omni, home):
    result = omni("speak", "-o", "out/", input="a\nb\n")
    assert result.exit_code == 0 and result.stdout == "a\nb\n"  # texts in input order


def test_several_lines_into_one_file_follow_input_order(omni, home, solo):
    result = omni("speak", "-", "-o", "all.wav", "-j", "4", "-q", input="First line.\nB\nThird one here.\n")
    assert result.exit_code == 0
    expected = np.concatenate([solo("First line."), solo("B"), solo("Third one here.")])
    assert np.array_equal(read_wav(home / "all.wav")[1], expected)
    assert result.stdout == "First line.\nB\nThird one here.\n"


def test_stdin_bytes_that_are_not_utf8_stop_at_that_line_and_keep_earlier_output(omni, home, solo):
    result = omni("speak", "-", "-o", "out/", "-q", input=b"fine\n\xff\xfe bad\nnever\n")
    assert result.exit_code == 2
    assert stderr_lines(result.stderr) == ["omni: error: stdin line 2 is not UTF-8 (byte 0xff at column 1)"]
    assert sorted(p.name for p in (home / "out").iterdir()) == ["0001.wav"]
    assert np.array_equal(read_wav(home / "out" / "0001.wav")[1], solo("fine"))


def test_a_line_over_the_limit_is_an_error_naming_it(omni, home):
    result = omni("speak", "-", "-o", "out/", "-q", input="ok\n" + "x" * 2001 + "\n")
    assert result.exit_code == 2
    [line] = stderr_lines(result.stderr)
    assert line.startswith("omni: error: line 2: ") and "limit of 2000" in line
    assert (home / "out" / "0001.wav").exists()


def test_without_output_the_text_still_streams_to_stdout(omni):
    result = omni("speak", HELLO)
    assert result.exit_code == 0 and result.stdout == HELLO + "\n"
    assert "audio not saved" in result.stderr


def test_chat_mode_and_barrier_handoff(omni, home):
    stream = omni("speak", "Hi there", "--mode", "chat", "-o", "s.wav", "--max-tokens", "8", "-q",
                   "--allow-truncation")  # a chat reply capped at 8 tokens is cut short: accepted here
    barrier = omni("speak", "Hi there", "--mode", "chat", "-o", "b.wav", "--max-tokens", "8", "-q", "--allow-truncation",
                   "--handoff", "barrier", "--policy", "round-robin")
    assert stream.exit_code == barrier.exit_code == 0 and stream.stdout == barrier.stdout
    assert np.array_equal(read_wav(home / "s.wav")[1], read_wav(home / "b.wav")[1])


def test_a_refused_run_creates_no_file(omni, home):
    (home / "taken.wav").write_bytes(b"keep me")
    result = omni("speak", "Hello", "-o", "taken.wav", "--trace", "run.jsonl")
    assert result.exit_code == 2 and "taken.wav exists" in result.stderr
    assert (home / "taken.wav").read_bytes() == b"keep me"
    assert not (home / "run.jsonl").exists()  # the trace is not created before the outputs are known good
    (home / "run.jsonl").write_text("old trace\n")
    result = omni("speak", "Hello", "-o", "new.wav", "--trace", "run.jsonl")
    assert result.exit_code == 2 and "run.jsonl exists" in result.stderr
    assert not (home / "new.wav").exists() and (home / "run.jsonl").read_text() == "old trace\n"
