"""Audio writers: exact bytes, a header valid after every chunk, kills, disk full, closed pipes."""

from __future__ import annotations

import ast
import errno
import io
import os
import select
import shutil
import signal
import struct
import subprocess
import sys
import textwrap
import wave
from pathlib import Path

import numpy as np
import pytest
import soundfile
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from omni_cli.audio import (
    UNKNOWN_SIZE,
    AudioOutputError,
    FlacFileWriter,
    OutputClosed,
    RawPcmWriter,
    WavFileWriter,
    WavStreamWriter,
    float_to_pcm16,
    open_audio_output,
)

REPO = Path(__file__).resolve().parents[1]
SR = 24000
CHUNK = 480  # one 50 Hz codec token of audio at 24 kHz
HAS_SOX = shutil.which("sox") is not None


def chunk(index: int, n: int = CHUNK) -> np.ndarray:
    """A deterministic chunk whose samples differ from chunk to chunk."""
    t = np.arange(n, dtype=np.float32)
    return (0.8 * np.sin(0.01 * (t + 1000 * index))).astype(np.float32)


def header_fields(data: bytes) -> tuple:
    return struct.unpack("<4sI4s4sIHHIIHH4sI", data[:44])


# float -> int16, exactly as documented


def test_pcm16_conversion_exact_values():
    x = np.array([0.0, 1.0, -1.0, 0.5, -0.5, 0.25, 1.5, -2.0, np.nan, np.inf, -np.inf], np.float32)
    got = float_to_pcm16(x)
    assert got.dtype == np.dtype("<i2")
    # 0.5 * 32767 = 16383.5 -> 16384 (half to even); 0.25 * 32767 = 8191.75 -> 8192
    assert got.tolist() == [0, 32767, -32767, 16384, -16384, 8192, 32767, -32767, 0, 32767, -32767]


@given(hnp.arrays(np.float32, st.integers(0, 64), elements=st.floats(-2, 2, width=32)))
def test_pcm16_conversion_matches_formula(x):
    expected = np.rint(np.clip(x.astype(np.float64), -1, 1) * 32767).astype(np.int16)
    np.testing.assert_array_equal(float_to_pcm16(x), expected)


def test_bad_samples_are_rejected():
    with pytest.raises(TypeError, match="floating point"):
        float_to_pcm16(np.zeros(4, np.int16))
    with pytest.raises(ValueError, match=r"\(n, 2\)"):
        float_to_pcm16(np.zeros(4, np.float32), channels=2)
    with pytest.raises(ValueError, match="sample_rate"):
        RawPcmWriter(io.BytesIO(), 0)


# WAV file: exact bytes, valid after every write


def test_wav_file_exact_bytes_and_header(tmp_path):
    path = tmp_path / "out.wav"
    sizes = [CHUNK, CHUNK, 100]
    with WavFileWriter(path, SR) as w:
        assert path.stat().st_size == 44  # the header is on disk before any sample
        for i, n in enumerate(sizes):
            w.write(chunk(i, n))
    raw = path.read_bytes()
    data_bytes = 2 * sum(sizes)
    assert len(raw) == 44 + data_bytes
    assert header_fields(raw) == (
        b"RIFF", 36 + data_bytes, b"WAVE", b"fmt ", 16, 1, 1, SR, 2 * SR, 2, 16, b"data", data_bytes
    )  # fmt: skip
    assert w.num_samples == 1060
    assert w.duration_s == pytest.approx(1060 / SR)


def test_wav_file_header_valid_after_every_write(tmp_path):
    path = tmp_path / "live.wav"
    expected = np.zeros(0, np.int16)
    with WavFileWriter(path, SR) as w:
        assert soundfile.info(str(path)).frames == 0
        for i in range(5):
            w.write(chunk(i))
            expected = np.concatenate([expected, float_to_pcm16(chunk(i))])
            # read by other readers while the writer is still open
            data, rate = soundfile.read(path, dtype="int16")
            assert rate == SR
            np.testing.assert_array_equal(data, expected)
            with wave.open(str(path)) as wf:
                assert wf.getnframes() == len(expected)
                assert wf.readframes(wf.getnframes()) == expected.tobytes()
            if HAS_SOX:
                out = subprocess.run(
                    ["sox", "--i", "-s", str(path)], check=False, capture_output=True, text=True
                )
                assert out.returncode == 0, out.stderr
                assert int(out.stdout) == len(expected)


def test_wav_file_stereo_round_trip(tmp_path):
    path = tmp_path / "stereo.wav"
    frames = np.stack([chunk(0), -chunk(1)], axis=1)
    with WavFileWriter(path, SR, channels=2) as w:
        w.write(frames)
    data, _ = soundfile.read(path, dtype="int16")
    np.testing.assert_array_equal(data, float_to_pcm16(frames, channels=2))
    assert path.stat().st_size == 44 + 4 * CHUNK


def test_wav_file_survives_sigkill(tmp_path):
    path = tmp_path / "killed.wav"
    n = 4800
    child = textwrap.dedent(f"""
        import sys, time
        import numpy as np
        from omni_cli.audio import WavFileWriter
        w = WavFileWriter(sys.argv[1], {SR})
        for i in range(2000):
            w.write(np.full({n}, (i % 1000) / 1000, np.float32))
            print(i + 1, flush=True)
        time.sleep(60)
    """)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(
        [sys.executable, "-c", child, str(path)], stdout=subprocess.PIPE, text=True, env=env
    )
    try:
        for line in proc.stdout:
            if int(line) >= 5:
                break
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
        proc.stdout.close()
    assert proc.returncode == -signal.SIGKILL
    data, _ = soundfile.read(path, dtype="int16")
    assert len(data) >= 5 * n and len(data) % n == 0
    values = data.reshape(-1, n)
    expected = float_to_pcm16(np.arange(len(values)) % 1000 / 1000)
    np.testing.assert_array_equal(values, np.repeat(expected[:, None], n, axis=1))


def test_missing_directory_is_one_line_error(tmp_path):
    path = tmp_path / "missing" / "out.wav"
    with pytest.raises(AudioOutputError) as info:
        WavFileWriter(path, SR)
    assert str(info.value) == f"cannot write {path}: No such file or directory"
    assert isinstance(info.value, OSError) and info.value.errno == errno.ENOENT
    assert not path.parent.exists()
    for target in [path.with_suffix(".flac"), path.with_suffix(".raw")]:
        with pytest.raises(AudioOutputError, match="No such file or directory"):
            open_audio_output(target, SR)


def test_directory_as_target(tmp_path):
    with pytest.raises(AudioOutputError) as info:
        WavFileWriter(tmp_path, SR)
    assert str(info.value) == f"cannot write {tmp_path}: Is a directory"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs mkfifo")
def test_fifo_path_is_not_seekable(tmp_path):
    fifo = tmp_path / "fifo.wav"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # so opening for writing doesn't block
    try:
        with pytest.raises(AudioOutputError, match="not a seekable file"):
            WavFileWriter(fifo, SR)
    finally:
        os.close(reader)


def _fail_third_chunk(monkeypatch, partial: bool):
    """os.write raising ENOSPC on the 3rd chunk (after half of it, when `partial`)."""
    real_write = os.write
    calls = {"chunks": 0}

    def fake_write(fd, data):
        if len(data) == 2 * CHUNK:
            calls["chunks"] += 1
            if calls["chunks"] == 3:
                if partial:
                    return real_write(fd, bytes(data[:CHUNK]))
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        if len(data) == CHUNK and calls["chunks"] == 3:  # the rest of the partial chunk
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", fake_write)


@pytest.mark.parametrize("partial", [False, True], ids=["nothing-written", "half-written"])
def test_disk_full_keeps_whole_chunks(tmp_path, monkeypatch, partial):
    path = tmp_path / "full.wav"
    w = WavFileWriter(path, SR)
    _fail_third_chunk(monkeypatch, partial)
    w.write(chunk(0))
    w.write(chunk(1))
    with pytest.raises(AudioOutputError) as info:
        w.write(chunk(2))
    assert str(info.value) == f"cannot write {path}: No space left on device"
    assert info.value.errno == errno.ENOSPC
    assert w.num_samples == 2 * CHUNK
    assert path.stat().st_size == 44 + 4 * CHUNK  # a half-written chunk is cut off
    data, _ = soundfile.read(path, dtype="int16")
    np.testing.assert_array_equal(data, float_to_pcm16(np.concatenate([chunk(0), chunk(1)])))
    monkeypatch.undo()
    w.write(chunk(3))  # space freed: the writer carries on after the last whole chunk
    w.close()
    data, _ = soundfile.read(path, dtype="int16")
    assert len(data) == 3 * CHUNK
    np.testing.assert_array_equal(data[-CHUNK:], float_to_pcm16(chunk(3)))


def test_closed_writer(tmp_path):
    w = WavFileWriter(tmp_path / "a.wav", SR)
    w.close()
    w.close()
    assert w.closed
    with pytest.raises(ValueError, match="closed"):
        w.write(chunk(0))


# streams


def _parse_stream_wav(data: bytes) -> tuple[tuple, bytes]:
    return header_fields(data), data[44:]


def test_wav_stream_unknown_length_header_and_pcm():
    out = io.BytesIO()
    with WavStreamWriter(out, SR) as w:
        assert len(out.getvalue()) == 44
        w.write(chunk(0))
        w.write(chunk(1, 100))
    fields, pcm = _parse_stream_wav(out.getvalue())
    assert fields == (
        b"RIFF", UNKNOWN_SIZE, b"WAVE", b"fmt ", 16, 1, 1, SR, 2 * SR, 2, 16, b"data", UNKNOWN_SIZE
    )  # fmt: skip
    expected = float_to_pcm16(np.concatenate([chunk(0), chunk(1, 100)]))
    assert pcm == expected.tobytes()
    assert w.num_samples == CHUNK + 100
    with wave.open(io.BytesIO(out.getvalue())) as wf:  # wave reads up to end of data
        assert (wf.getframerate(), wf.getsampwidth(), wf.getnchannels()) == (SR, 2, 1)
        assert wf.readframes(10**6) == expected.tobytes()


def test_wav_stream_flushes_every_chunk_through_a_pipe():
    read_fd, write_fd = os.pipe()
    with os.fdopen(read_fd, "rb", buffering=0) as reader, os.fdopen(write_fd, "wb") as pipe:
        w = WavStreamWriter(pipe, SR)
        expected = [44]
        for i in range(3):
            w.write(chunk(i))
            expected.append(2 * CHUNK)
        w.close()
        assert not pipe.closed  # the caller's stream stays open
        got = []
        for size in expected:
            # unflushed bytes would sit in the pipe object's buffer and never arrive here
            assert select.select([reader], [], [], 5)[0]
            got.append(len(reader.read(size)))
        assert got == expected


@pytest.mark.skipif(not HAS_SOX, reason="sox not installed")
def test_sox_reads_wav_stream_from_pipe():
    out = io.BytesIO()
    with WavStreamWriter(out, SR) as w:
        for i in range(3):
            w.write(chunk(i))
    result = subprocess.run(
        ["sox", "-V1", "-t", "wav", "-", "-t", "raw", "-"],
        input=out.getvalue(),
        capture_output=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    expected = float_to_pcm16(np.concatenate([chunk(i) for i in range(3)]))
    assert result.stdout == expected.tobytes()


def test_raw_pcm_is_headerless_s16le():
    out = io.BytesIO()
    with RawPcmWriter(out, SR) as w:
        w.write(chunk(0))
        w.write(chunk(1, 7))
    assert len(out.getvalue()) == 2 * (CHUNK + 7)
    expected = float_to_pcm16(np.concatenate([chunk(0), chunk(1, 7)]))
    np.testing.assert_array_equal(np.frombuffer(out.getvalue(), "<i2"), expected)


def test_broken_pipe_is_output_closed():
    read_fd, write_fd = os.pipe()
    os.close(read_fd)
    with os.fdopen(write_fd, "wb") as pipe:
        with pytest.raises(OutputClosed):
            WavStreamWriter(pipe, SR)  # the header is written (and flushed) at once
        raw = RawPcmWriter(pipe, SR)
        with pytest.raises(OutputClosed) as info:
            raw.write(chunk(0))
        assert not isinstance(info.value, AudioOutputError)
        assert raw.num_samples == 0
        raw.close()  # no second error once the reader is gone
        with pytest.raises(OutputClosed), RawPcmWriter(pipe, SR) as w:
            w.write(chunk(0))
        try:
            pipe.close()
        except BrokenPipeError:
            pass  # bytes still buffered in the pipe object


class _FullStream(io.RawIOBase):
    name = "<stdout>"

    def writable(self):
        return True

    def write(self, data):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def test_other_stream_error_is_audio_output_error():
    with pytest.raises(AudioOutputError) as info:
        WavStreamWriter(_FullStream(), SR)
    assert str(info.value) == "cannot write <stdout>: No space left on device"


# FLAC and the factory


def test_flac_round_trip(tmp_path):
    path = tmp_path / "out.flac"
    with FlacFileWriter(path, SR) as w:
        for i in range(4):
            w.write(chunk(i))
    data, rate = soundfile.read(path, dtype="int16")
    assert rate == SR and soundfile.info(str(path)).format == "FLAC"
    np.testing.assert_array_equal(
        data, float_to_pcm16(np.concatenate([chunk(i) for i in range(4)]))
    )


@pytest.mark.parametrize(
    "name, fmt, cls",
    [
        ("a.wav", None, WavFileWriter),
        ("a.WAV", None, WavFileWriter),
        ("a.flac", None, FlacFileWriter),
        ("a.raw", None, RawPcmWriter),
        ("a.pcm", None, RawPcmWriter),
        ("a.out", "wav", WavFileWriter),
        ("a.wav", "raw", RawPcmWriter),
    ],
)
def test_factory_paths(tmp_path, name, fmt, cls):
    with open_audio_output(tmp_path / name, SR, fmt) as w:
        assert type(w) is cls
        w.write(chunk(0))
    expected_size = {WavFileWriter: 44 + 2 * CHUNK, RawPcmWriter: 2 * CHUNK}.get(cls)
    if expected_size is not None:
        assert (tmp_path / name).stat().st_size == expected_size


def test_factory_streams():
    assert type(open_audio_output(io.BytesIO(), SR)) is WavStreamWriter
    assert type(open_audio_output(io.BytesIO(), SR, "wav")) is WavStreamWriter
    assert type(open_audio_output(io.BytesIO(), SR, "raw")) is RawPcmWriter
    with pytest.raises(AudioOutputError, match="FLAC needs a file path"):
        open_audio_output(io.BytesIO(), SR, "flac")


def test_factory_unknown_suffix_and_format(tmp_path):
    with pytest.raises(AudioOutputError) as info:
        open_audio_output(tmp_path / "a.mp3", SR)
    assert str(info.value) == (
        f"cannot write {tmp_path / 'a.mp3'}: unknown audio file suffix '.mp3' "
        "(supported: .flac, .pcm, .raw, .wav; or pass a format)"
    )
    with pytest.raises(AudioOutputError, match="no suffix"):
        open_audio_output(tmp_path / "out", SR)
    with pytest.raises(AudioOutputError, match=r"unknown audio format 'ogg' \(supported: flac"):
        open_audio_output(tmp_path / "a.wav", SR, "ogg")
    assert not list(tmp_path.iterdir())


def test_audio_imports_only_stdlib_numpy_soundfile():
    allowed = set(sys.stdlib_module_names) | {"numpy", "soundfile"}
    for path in (REPO / "omni_cli" / "audio").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module]
            else:
                continue
            for name in names:
                assert name.split(".")[0] in allowed, f"{path.name} imports {name}"
