"""`omni chat`: a heard question from a file or a WAV stream on stdin, answered on stdout and in speech."""

from __future__ import annotations

import json
import struct
import time

import numpy as np
import pytest
from cli_helpers import parse_wav, read_wav, stderr_lines

TOY = "qwen2_5_omni_toy"


def question(path, rate: int = 44100, seconds: float = 1.6, channels: int = 2) -> np.ndarray:
    """A stereo 44.1 kHz question (the encoder hears 16 kHz mono): written as 16-bit PCM, returned as written."""
    import soundfile

    t = np.arange(int(seconds * rate)) / rate
    left = 0.3 * np.sin(2 * np.pi * 220 * t * (1 + 0.3 * t))
    data = np.stack([left, 0.5 * left][:channels], axis=1).astype(np.float32)
    soundfile.write(path, data, rate, subtype="PCM_16")
    return data


def expected_answer(path, text: str = "", **request) -> np.ndarray:
    """The answer's int16 samples from the library, given the same file."""
    from omni_cli.api import load
    from omni_cli.audio import float_to_pcm16
    from omni_cli.audio.heard import read_file
    from omni_cli.engine import Engine
    from omni_cli.spec import SpeakRequest

    result = Engine(load(TOY, "chat")).submit(SpeakRequest(text, mode="chat", audio=read_file(str(path)), **request),
                                              collect=True).result()
    assert result.error is None and result.samples.size
    return float_to_pcm16(result.samples)


def test_chat_answers_a_file_in_speech_and_text(omni, home):
    question(home / "q.wav")
    result = omni("chat", "-c", TOY, "--audio", "q.wav", "-o", "a.wav", "--max-tokens", "6", "--allow-truncation",
                  "--json")
    assert result.exit_code == 0, result.stderr
    record = json.loads(result.stdout)
    assert record["work_units"]["audio_encode"] == 2  # 1.6 s in 1 s blocks
    rate, samples = read_wav(home / "a.wav")
    assert rate == 24000 and np.array_equal(samples, expected_answer(home / "q.wav", max_tokens=6))
    assert record["num_samples"] == samples.size


def test_text_with_audio_is_part_of_the_turn(omni, home):
    question(home / "q.wav")
    plain = omni("chat", "-c", TOY, "--audio", "q.wav", "-o", "a.wav", "--max-tokens", "6", "--allow-truncation")
    worded = omni("chat", "-c", TOY, "--audio", "q.wav", "Be brief.", "-o", "b.wav", "--max-tokens", "6",
                  "--allow-truncation")
    assert plain.exit_code == worded.exit_code == 0
    _, with_text = read_wav(home / "b.wav")
    assert np.array_equal(with_text, expected_answer(home / "q.wav", "Be brief.", max_tokens=6))
    assert not np.array_equal(with_text, read_wav(home / "a.wav")[1])


def wav_stream_header(rate: int, channels: int) -> bytes:
    """A WAV header with unknown sizes, as `arecord` writes to a pipe."""
    return struct.pack("<4sI4s4sIHHIIHH4sI", b"RIFF", 0xFFFFFFFF, b"WAVE", b"fmt ", 16, 1, channels, rate,
                       rate * channels * 2, channels * 2, 16, b"data", 0xFFFFFFFF)


def test_stdin_wav_stream_is_heard_as_it_arrives(spawn, home):
    data = question(home / "q.wav", rate=16000, seconds=2.3, channels=1)
    pcm = (np.clip(data[:, 0], -1, 1) * 32767).astype("<i2")  # PCM_16 as soundfile wrote it
    p = spawn("chat", "-c", TOY, "--audio", "-", "-o", "-", "--max-tokens", "5", "--allow-truncation",
              stdin=__import__("subprocess").PIPE)
    p.stdin.write(wav_stream_header(16000, 1))
    body = pcm.tobytes()
    for i in range(0, len(body), 3001):  # odd pieces: never a whole frame or block
        p.stdin.write(body[i:i + 3001])
        p.stdin.flush()
        time.sleep(0.002)
    p.stdin.close()
    out, err = p.stdout.read(), p.stderr.read()
    p.wait(timeout=120)
    assert p.returncode == 0, err.decode()
    _, samples = parse_wav(out)
    assert np.array_equal(samples, expected_answer(home / "q.wav", max_tokens=5))


@pytest.mark.parametrize("args, message", [
    (["-c", "piper_joe", "--audio", "q.wav"], "card 'piper_joe' cannot listen"),
    (["-c", TOY, "--audio", "missing.wav"], "--audio: missing.wav: no such file"),
    (["-c", TOY, "--audio", "notes.txt"], "--audio: notes.txt: cannot read it as audio"),
    (["-c", TOY], "nothing to answer"),
])
def test_bad_input_is_one_line_and_exit_2(omni, home, args, message):
    question(home / "q.wav")
    (home / "notes.txt").write_text("not audio\n")
    result = omni("chat", *args, "-o", "a.wav")
    assert result.exit_code == 2
    assert stderr_lines(result.stderr) == [stderr_lines(result.stderr)[0]] and message in result.stderr
    assert result.stdout == "" and not (home / "a.wav").exists()


def test_stdin_that_is_not_a_wav_stream(omni, home):
    result = omni("chat", "-c", TOY, "--audio", "-", input="hello\n")
    assert result.exit_code == 2 and "not a WAV stream" in result.stderr


def test_ctrl_c_while_the_audio_still_arrives_exits_130(spawn, home):
    import signal
    import subprocess

    p = spawn("chat", "-c", TOY, "--audio", "-", "-o", "a.wav", "--max-tokens", "5", stdin=subprocess.PIPE)
    p.stdin.write(wav_stream_header(16000, 1) + np.zeros(16000 * 3, "<i2").tobytes())
    p.stdin.flush()
    time.sleep(5)  # the toy card loads and hears the first blocks (a signal before that is covered elsewhere)
    assert p.poll() is None
    p.send_signal(signal.SIGINT)  # stdin stays open: the step waiting for more audio must return anyway
    p.wait(timeout=30)
    err = p.stderr.read().decode()
    assert p.returncode == 130, err
    assert "stopped: interrupted" in err and "Traceback" not in err
    p.stdin.close()
