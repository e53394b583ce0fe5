"""omni_cli's cache of libraries compiled ahead of time (backends/hf/aoti.py): where it is, what a build leaves,
and what a stopped build left."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("torch")

from omni_cli.backends.hf import aoti  # noqa: E402


def test_the_cache_is_omni_cli_cache_then_xdg_then_home(monkeypatch, tmp_path):
    monkeypatch.setenv("OMNI_CLI_CACHE", str(tmp_path / "mine"))
    assert aoti.cache_root() == tmp_path / "mine"
    monkeypatch.delenv("OMNI_CLI_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert aoti.cache_root() == tmp_path / "xdg" / "omni_cli"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert aoti.cache_root() == tmp_path / "home" / ".cache" / "omni_cli"


def test_a_build_runs_once_and_clears_what_a_stopped_build_left(tmp_path):
    folder = tmp_path / "parts"
    stale = folder / "fn-k1.partial-abc123"  # a build ended at once (os._exit on Ctrl-C, kill -9)
    stale.mkdir(parents=True)
    (stale / "package.pt2").write_bytes(b"half")
    other = folder / "fn-k2.partial-xyz"  # another key's: not this build's to touch
    other.mkdir()
    builds, said = [], []

    def build(path: Path) -> None:
        builds.append(path)
        path.write_bytes(b"library")

    path = aoti.built("parts", "fn", "k1", build, said.append, root=tmp_path)
    assert path == folder / "fn-k1.so" and path.read_bytes() == b"library"
    assert builds == said == [path] and not stale.exists() and other.exists()
    assert aoti.built("parts", "fn", "k1", build, said.append, root=tmp_path) == path
    assert builds == said == [path]  # the second time: from the cache, nothing said


def test_the_key_changes_with_the_material_and_the_threads():
    one = aoti.key_of({"form": "masks"}, 1)
    assert one == aoti.key_of({"form": "masks"}, 1) and len(one) == 20
    assert len({one, aoti.key_of({"form": "blocks"}, 1), aoti.key_of({"form": "masks"}, 2)}) == 3
