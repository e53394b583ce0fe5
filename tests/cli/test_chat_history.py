"""`omni chat --history FILE` across invocations, and the prompt loop on a terminal (a pty): turns appended only
when a reply ends well, malformed files refused with FILE:LINE, Ctrl-C and Ctrl-D as documented."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time

import numpy as np
import pytest
from cli_helpers import read_wav, stderr_lines
from test_chat import TOY, question, wav_stream_header

ANSWER = ("--max-tokens", "6", "--allow-truncation")


def lines(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def answer_after(history: list[dict], base, text: str, audio=None) -> np.ndarray:
    """The library's answer to `text` after the turns in `history` (their audio read from `base`)."""
    from omni_cli.api import load
    from omni_cli.audio import float_to_pcm16
    from omni_cli.audio.heard import read_file
    from omni_cli.engine import Engine
    from omni_cli.spec import PriorTurn, SpeakRequest

    prior = tuple(PriorTurn(t["role"], t["text"], tuple(read_file(str(base / p)) for p in t.get("audio", [])
                                                        if t["role"] == "user")) for t in history)
    request = SpeakRequest(text, mode="chat", max_tokens=6, history=prior, audio=audio)
    result = Engine(load(TOY, "chat")).submit(request, collect=True).result()
    assert result.samples.size
    return float_to_pcm16(result.samples)


def test_a_conversation_continues_across_invocations(omni, home):
    question(home / "q.wav")
    first = omni("chat", "-c", TOY, "--audio", "q.wav", "--history", "talk.jsonl", "-o", "a1.wav", *ANSWER)
    assert first.exit_code == 0, first.stderr
    turns = lines(home / "talk.jsonl")
    assert turns == [{"role": "user", "text": "", "audio": ["q.wav"]},
                     {"role": "assistant", "text": first.stdout.rstrip("\n"), "audio": ["a1.wav"]}]
    second = omni("chat", "-c", TOY, "And then?", "--history", "talk.jsonl", "-o", "a2.wav", *ANSWER)
    assert second.exit_code == 0, second.stderr
    assert [t["text"] for t in lines(home / "talk.jsonl")[2:]] == ["And then?", second.stdout.rstrip("\n")]
    _, samples = read_wav(home / "a2.wav")
    assert np.array_equal(samples, answer_after(turns, home, "And then?"))  # turn one heard again from q.wav
    assert not np.array_equal(samples, answer_after([], home, "And then?"))


def test_a_run_that_fails_appends_nothing(omni, home):
    (home / "talk.jsonl").write_text('{"role": "user", "text": "hi"}\n{"role": "assistant", "text": "yo"}\n')
    before = (home / "talk.jsonl").read_bytes()
    cut = omni("chat", "-c", TOY, "More.", "--history", "talk.jsonl", "--max-tokens", "3")  # cut short: exit 1
    assert cut.exit_code == 1 and "--allow-truncation" in cut.stderr
    bad = omni("chat", "-c", TOY, "More.", "--history", "talk.jsonl", "--voice", "nobody")
    assert bad.exit_code == 2
    assert (home / "talk.jsonl").read_bytes() == before


@pytest.mark.parametrize("content, message", [
    ('{"role": "user", "text": "hi"}\n{"role": "user", "txt": "x"}\n', "talk.jsonl:2: unknown key 'txt'"),
    ('{"role": "user", "text": "hi"\n', "talk.jsonl:1: not a JSON object"),
    ('{"role": "user", "audio": ["gone.wav"]}\n', "turn 1: audio"),
])
def test_a_malformed_history_is_one_line_and_exit_2(omni, home, content, message):
    (home / "talk.jsonl").write_text(content)
    result = omni("chat", "-c", TOY, "hi", "--history", "talk.jsonl", "-o", "a.wav")
    assert result.exit_code == 2 and len(stderr_lines(result.stderr)) == 1, result.stderr
    assert "--history" in result.stderr and message in result.stderr and "Traceback" not in result.stderr
    assert (home / "talk.jsonl").read_text() == content and not (home / "a.wav").exists()


def test_a_history_that_cannot_be_written_is_refused_first(omni, home):
    result = omni("chat", "-c", TOY, "hi", "--history", "missing/talk.jsonl")
    assert result.exit_code == 2 and "cannot create it" in result.stderr


def test_audio_heard_from_stdin_is_kept_beside_the_history(spawn, home):
    data = question(home / "q.wav", rate=16000, seconds=1.3, channels=1)
    pcm = (np.clip(data[:, 0], -1, 1) * 32767).astype("<i2")
    p = spawn("chat", "-c", TOY, "--audio", "-", "--history", "talk.jsonl", *ANSWER, stdin=subprocess.PIPE)
    out, err = p.communicate(wav_stream_header(16000, 1) + pcm.tobytes(), timeout=120)
    assert p.returncode == 0, err.decode()
    turns = lines(home / "talk.jsonl")
    assert turns[0] == {"role": "user", "text": "", "audio": ["talk.jsonl.audio/0001.wav"]}
    import soundfile

    kept, rate = soundfile.read(home / "talk.jsonl.audio/0001.wav", dtype="float32")
    assert rate == 16000 and np.array_equal(kept, pcm.astype(np.float32) / 32768)


class Terminal:
    """`omni chat` with stdin, stdout and stderr on a pseudo-terminal, as a person runs it."""

    def __init__(self, spawn, *args):
        import pty

        self.leader, follower = pty.openpty()
        self.proc = spawn("chat", *args, stdin=follower, stdout=follower, stderr=follower)
        os.close(follower)
        self.seen = b""

    def expect(self, text: bytes, count: int = 1, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while self.seen.count(text) < count:
            assert time.monotonic() < deadline, self.seen.decode(errors="replace")
            try:
                self.seen += os.read(self.leader, 65536)
            except OSError:  # EIO: the process closed the terminal (it exited) before saying it
                raise AssertionError(f"exited {self.proc.wait(60)}: {self.seen.decode(errors='replace')}") from None

    def send(self, data: bytes) -> None:
        os.write(self.leader, data)

    def pump(self, seconds: float) -> None:
        """Read what the terminal shows for `seconds` (a terminal nobody reads blocks its writer)."""
        import select

        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            if select.select([self.leader], [], [], left)[0]:
                try:
                    self.seen += os.read(self.leader, 65536)
                except OSError:  # EIO: the process closed the terminal
                    return

    def close(self) -> int:
        deadline = time.monotonic() + 60
        while self.proc.poll() is None and time.monotonic() < deadline:
            self.pump(0.2)
        code = self.proc.wait(1)
        os.close(self.leader)
        return code


def test_a_conversation_typed_on_a_terminal(spawn, home):
    term = Terminal(spawn, "-c", TOY, "-o", "replies/", "--history", "talk.jsonl", *ANSWER)
    term.expect(b"Ctrl-D ends")
    term.expect(b"> ")
    term.send(b"hello\n")
    term.expect(b"> ", 2)
    term.send(b"and then\n")
    term.expect(b"> ", 3)
    term.send(b"\x04")  # Ctrl-D at the start of a line: the end of input
    assert term.close() == 0, term.seen.decode(errors="replace")
    turns = lines(home / "talk.jsonl")
    assert [(t["role"], t["text"]) for t in turns[::2]] == [("user", "hello"), ("user", "and then")]
    assert [t["audio"] for t in turns[1::2]] == [["replies/0001.wav"], ["replies/0002.wav"]]
    _, second = read_wav(home / "replies/0002.wav")
    assert np.array_equal(second, answer_after(turns[:2], home, "and then"))  # the first turn kept in memory


def test_a_typed_conversation_hears_the_files_clips_once(spawn, home):
    question(home / "q.wav")
    (home / "talk.jsonl").write_text('{"role": "user", "text": "", "audio": ["q.wav"]}\n'
                                     '{"role": "assistant", "text": "a tone"}\n')
    term = Terminal(spawn, "-c", TOY, "--history", "talk.jsonl", *ANSWER)
    term.expect(b"after 2 earlier turns")
    term.expect(b"> ")
    term.send(b"what was it?\n")
    term.expect(b"> ", 2)
    assert b"without encoding" not in term.seen  # the first reply encodes the file's clip
    term.send(b"and then?\n")
    term.expect(b"> ", 3)
    term.send(b"\x04")
    assert term.close() == 0
    assert b"(heard 1 earlier clip again without encoding it)" in term.seen
    assert len(lines(home / "talk.jsonl")) == 6


def test_ctrl_c_stops_a_reply_then_ends_at_the_prompt(spawn, home):
    term = Terminal(spawn, "-c", TOY, "-o", "replies/", "--history", "talk.jsonl", "--max-tokens", "2000")
    term.expect(b"> ")
    term.send(b"hello\n")  # the toy card's reply to it runs to the 2000-token cap: tens of seconds
    term.pump(1.5)
    term.proc.send_signal(signal.SIGINT)
    term.expect(b"(stopped: the turn is not kept)\r\n> ")  # the reply's own text may hold "> " too
    term.proc.send_signal(signal.SIGINT)  # at the prompt: the conversation ends
    assert term.close() == 130, term.seen.decode(errors="replace")
    assert b"Traceback" not in term.seen and not (home / "talk.jsonl").exists()
