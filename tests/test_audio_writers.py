"""Audio writers: pcm16 conversion, and WAV files with exact bytes and a header valid after every chunk,
through kills, disk full and bad targets (streams, FLAC and the factory: test_audio_streams.py)."""

from __future__ import annotations

import errno
import io
import os
import signal
import subprocess
import sys
import textwrap
import wave

import numpy as np
import pytest
import soundfile
from audio_helpers import CHUNK, HAS_SOX, REPO, SR, chunk, header_fields
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from omni_cli.audio import (
    AudioOutputError,
    RawPcmWriter,
    WavFileWriter,
    float_to_pcm16,
    open_audio_output,
)

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
