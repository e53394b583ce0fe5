"""`omni speak` to MP3, Ogg/Opus and AAC files and pipes, decoded (libsndfile, PyAV) against the WAV path."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from codec_helpers import decode, similarity  # noqa: E402

HELLO = "Hello, world, in a compressed file."


@pytest.mark.parametrize("suffix", [".mp3", ".opus"])
def test_a_codec_file_by_its_suffix_decodes_to_the_wav_paths_audio(omni, home, solo, suffix):
    result = omni("speak", HELLO, "-o", f"hello{suffix}", "-q")
    assert result.exit_code == 0, result.stderr
    samples, rate = decode((home / f"hello{suffix}").read_bytes())
    reference = solo(HELLO).astype(np.float32) / 32767
    assert rate == 24000 and abs(len(samples) - len(reference)) <= 2400
    assert similarity(samples, reference)[0] >= 0.95


@pytest.mark.parametrize("fmt", ["mp3", "opus"])
def test_a_codec_to_stdout_streams_a_decodable_file(omni, solo, fmt):
    result = omni("speak", HELLO, "-o", "-", "--format", fmt, "-q")
    assert result.exit_code == 0, result.stderr
    samples, rate = decode(result.stdout_bytes)
    assert rate == 24000 and similarity(samples, solo(HELLO).astype(np.float32) / 32767)[0] >= 0.95


def test_the_factory_maps_the_new_suffixes(tmp_path):
    from omni_cli.audio import SUFFIX_FORMATS, open_audio_output
    from omni_cli.audio.codec_writers import CodecFileWriter

    assert SUFFIX_FORMATS[".mp3"] == "mp3" and SUFFIX_FORMATS[".opus"] == "opus"
    with open_audio_output(tmp_path / "x.OPUS", 22050) as writer:  # a rate Opus cannot carry: resampled
        assert isinstance(writer, CodecFileWriter)
        writer.write(np.sin(np.arange(22050) * 0.05).astype(np.float32) * 0.3)
    samples, rate = decode((tmp_path / "x.OPUS").read_bytes())
    assert rate == 24000 and abs(len(samples) - 24000) < 960


@pytest.mark.parametrize("target", ["file", "stdout"])
def test_aac_to_a_file_or_stdout_is_adts_that_decodes_to_the_wav_paths_audio(omni, home, solo, target):
    pytest.importorskip("av")
    from codec_helpers import decode_adts

    args = ["-o", "hello.aac"] if target == "file" else ["-o", "-", "--format", "aac"]
    result = omni("speak", HELLO, *args, "-q")
    assert result.exit_code == 0, result.stderr
    data = (home / "hello.aac").read_bytes() if target == "file" else result.stdout_bytes
    samples, rate = decode_adts(data)
    reference = solo(HELLO).astype(np.float32) / 32767
    assert rate == 24000 and 0 <= len(samples) - len(reference) <= 2 * 1024
    assert similarity(samples, reference)[0] >= 0.95


def test_aac_without_pyav_is_one_line_naming_the_extra(omni, monkeypatch):
    monkeypatch.setitem(sys.modules, "av", None)
    result = omni("speak", HELLO, "-o", "hello.aac", "-q")
    assert result.exit_code != 0 and "Traceback" not in result.stderr
    assert "pip install" in result.stderr and "[serve]" in result.stderr and len(result.stderr.strip().splitlines()) == 1
