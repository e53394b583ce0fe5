"""Audio streams (WAV to a pipe, raw PCM, closed pipes), FLAC and the output factory."""

from __future__ import annotations

import ast
import errno
import io
import os
import select
import subprocess
import sys
import wave

import numpy as np
import pytest
import soundfile
from audio_helpers import CHUNK, HAS_SOX, REPO, SR, chunk, header_fields

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
        open_audio_output(tmp_path / "a.ogg", SR)
    assert str(info.value) == (
        f"cannot write {tmp_path / 'a.ogg'}: unknown audio file suffix '.ogg' "
        "(supported: .aac, .flac, .mp3, .opus, .pcm, .raw, .wav; or pass a format)"
    )
    with pytest.raises(AudioOutputError, match="no suffix"):
        open_audio_output(tmp_path / "out", SR)
    with pytest.raises(AudioOutputError, match=r"unknown audio format 'ogg' \(supported: aac, flac"):
        open_audio_output(tmp_path / "a.wav", SR, "ogg")
    assert not list(tmp_path.iterdir())


def test_audio_imports_only_stdlib_numpy_and_the_codec_libraries():
    # soxr: Opus at rates it cannot carry; av: AAC (the serve extra); PIL: pictures a question shows
    allowed = set(sys.stdlib_module_names) | {"numpy", "soundfile", "soxr", "av", "PIL"}
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
