"""omni_cli's cache of libraries compiled ahead of time (backends/hf/aoti.py): where it is, what a build leaves,
and what a stopped build left."""

from __future__ import annotations

import os
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


# A library whose loading has an effect we can see: its constructor writes MARKER. dlopen runs constructors,
# so the marker's absence proves a planted file was never loaded.
PLANTED_C = """
#include <stdio.h>
__attribute__((constructor)) static void planted(void) { FILE *f = fopen(MARKER, "w"); if (f) fclose(f); }
"""


def _library(tmp_path: Path, name: str, marker: Path) -> Path:
    import shutil
    import subprocess

    if shutil.which("gcc") is None:
        pytest.skip("needs gcc to make a shared library")
    source = tmp_path / f"{name}.c"
    source.write_text(PLANTED_C)
    out = tmp_path / f"{name}.so"
    subprocess.run(["gcc", "-shared", "-fPIC", f'-DMARKER="{marker}"', "-o", str(out), str(source)], check=True)
    return out


def test_a_planted_library_is_never_loaded_and_is_built_again_with_a_line_naming_it(tmp_path):
    from omni_cli.cache import CacheRefused

    marker = tmp_path / "planted-ran"
    planted = _library(tmp_path, "planted", marker)
    root = tmp_path / "cache"
    folder = root / "parts"
    folder.mkdir(parents=True, mode=0o700)
    path = folder / "fn-k1.so"
    path.write_bytes(planted.read_bytes())  # another's file at the very name omni would load
    said, built_ = [], []

    def build(library: Path) -> None:
        built_.append(library)
        library.write_bytes(b"omni's own library")

    assert aoti.built("parts", "fn", "k1", build, root=root, on_distrust=lambda p, why: said.append((p, why))) == path
    assert said == [(path, "it has no digest")] and built_ == [path]
    assert path.read_bytes() == b"omni's own library" and not marker.exists()
    path.write_bytes(planted.read_bytes())  # swapped in after omni recorded its digest
    with pytest.raises(CacheRefused, match="was not made by omni"):
        aoti.CompiledFile(path, {})
    assert not marker.exists()
    assert aoti.built("parts", "fn", "k1", build, root=root, on_distrust=lambda p, why: said.append((p, why))) == path
    assert said[-1] == (path, "its digest does not match") and path.read_bytes() == b"omni's own library"
    assert not marker.exists()


def test_the_marker_shows_a_load_so_its_absence_means_something(tmp_path):
    from omni_cli import cache

    marker = tmp_path / "planted-ran"
    library = tmp_path / "lib.so"
    library.write_bytes(_library(tmp_path, "planted", marker).read_bytes())
    cache.record(library)  # as if omni had made it: then it is loaded (and is no AOTInductor library)
    with pytest.raises(AttributeError):
        aoti.CompiledFile(library, {})
    assert marker.exists()


def test_a_library_cut_short_is_built_again_not_loaded(tmp_path):
    builds = []

    def build(library: Path) -> None:
        builds.append(library)
        library.write_bytes(b"\x7fELF" + b"x" * 4096)

    path = aoti.built("parts", "fn", "k1", build, root=tmp_path)
    path.write_bytes(path.read_bytes()[:100])  # a crash between write and rename, a partial copy
    said = []
    assert aoti.built("parts", "fn", "k1", build, root=tmp_path, on_distrust=lambda p, why: said.append(why)) == path
    assert said == ["its digest does not match"] and len(builds) == 2 and path.stat().st_size == 4100


@pytest.mark.parametrize("loose", ["others_write", "sticky_not_enough_for_the_cache"])
def test_a_cache_folder_others_can_write_is_refused(tmp_path, loose):
    from omni_cli.cache import CacheRefused

    root = tmp_path / "cache"
    root.mkdir()
    os.chmod(root, 0o777 if loose == "others_write" else 0o1777)
    with pytest.raises(CacheRefused, match="writable by other users"):
        aoti.built("parts", "fn", "k1", lambda p: p.write_bytes(b"x"), root=root)
    assert not (root / "parts").exists()


def test_a_cache_folder_another_user_owns_is_refused(tmp_path):
    import pwd
    import subprocess

    from omni_cli.cache import CacheRefused

    if os.getuid() != 0:
        pytest.skip("needs root to give a folder to another user")
    name = "omni-cache-other"
    try:
        pwd.getpwnam(name)
    except KeyError:
        if subprocess.run(["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", name]).returncode:
            pytest.skip("useradd failed")
    root = tmp_path / "cache"
    (root / "parts").mkdir(parents=True, mode=0o700)
    os.chown(root, pwd.getpwnam(name).pw_uid, -1)
    with pytest.raises(CacheRefused, match="owned by another user"):
        aoti.built("parts", "fn", "k1", lambda p: p.write_bytes(b"x"), root=root)
