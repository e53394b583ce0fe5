"""Functions compiled ahead of time (AOTInductor), kept in omni_cli's cache and run with the GIL let go.

The vocoder's small models spend most of a first chunk's time in fixed costs: hundreds of short tensor
operations, each through Python and torch's dispatcher. Exported with `torch.export` and compiled by
AOTInductor, such a function is one C++ call. Two things make that usable in a command-line tool:

- **Built once per machine, loaded in milliseconds.** The compile takes tens of seconds; the shared library
  it makes is kept in the cache (`cache_root`) under a key of everything its code depends on (`key_of`: the
  torch build, this CPU, the threads its loops were made for, and what the caller names: a model's
  configuration, a format version). Weights are not in it: the file is compiled with its constants left
  out (`package_constants_in_so: False`) and each load hands it the loaded model's own tensors by reference.
  One process builds a key at a time (a lock beside the file); it is written under a temporary name and
  renamed, and its digest recorded beside it (omni_cli/cache.py). The cache trusts nothing it cannot prove it
  made: its folders must be private (`cache.CacheRefused` otherwise: the caller runs the part eager), and a
  file whose digest is missing or wrong (planted, cut short, edited) is never loaded: it is removed and built
  again, and the caller told which file it was.
- **Run through its C interface, not torch's binding.** torch 2.13's `AOTIModelPackageLoader.run` holds the
  GIL for the whole call, and its container holds one model, so the vocoder's row threads would take turns.
  `CompiledFile` opens the library with ctypes (which lets the GIL go during a foreign call) and makes a
  container with one model per thread that may call it, so two row threads overlap where through torch's
  binding they would take no less time than one.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import hashlib
import json
import os
import platform
import shutil
import tempfile
import warnings
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import torch

from omni_cli import cache
from omni_cli.cache import CACHE_ENV, CacheRefused, cache_root  # noqa: F401 - this module's callers use them


@functools.cache
def _cpu() -> str:
    """This CPU's model and feature flags (inductor compiles with -march=native)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return platform.machine()
    wanted: dict[str, str] = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip()
        if key in ("model name", "flags", "Features", "CPU implementer", "CPU part") and key not in wanted:
            wanted[key] = value.strip()
    return json.dumps(wanted, sort_keys=True) + platform.machine()


def key_of(material: dict, threads: int) -> str:
    """The cache key of a compiled function: the caller's `material` (its form and model configuration), the
    intra-op threads its loops are made for, and the machine and torch build it is compiled on."""
    whole = {"material": material, "threads": threads, "torch": torch.__version__,
             "torch_git": getattr(torch.version, "git_version", ""), "python": platform.python_version(),
             "cpu": _cpu()}
    return hashlib.sha256(json.dumps(whole, sort_keys=True, default=str).encode()).hexdigest()[:20]


def compile_to(exported: Any, library: Path) -> None:
    """Compile an ExportedProgram with AOTInductor (its constants left out) and keep only its shared library
    at `library`, written under a temporary name and renamed."""
    from torch._inductor import aoti_compile_and_package

    library.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=library.parent, prefix=library.stem + ".partial-") as scratch:
        package = Path(scratch) / "package.pt2"
        with _without_torch_deprecations():
            aoti_compile_and_package(exported, package_path=str(package),
                                     inductor_configs={"aot_inductor.package_constants_in_so": False})
        with zipfile.ZipFile(package) as archive:
            (name,) = [n for n in archive.namelist() if n.endswith(".so")]
            made = Path(scratch) / "made.so"
            made.write_bytes(archive.read(name))
        os.chmod(made, 0o644)
        os.replace(made, library)


def export(module: torch.nn.Module, example: tuple, shapes: Any) -> Any:
    """`torch.export.export` without torch's own deprecation warnings."""
    with torch.no_grad(), _without_torch_deprecations():
        return torch.export.export(module, example, dynamic_shapes=shapes)


@contextlib.contextmanager
def _without_torch_deprecations() -> Iterator[None]:
    """torch's own FutureWarnings and DeprecationWarnings, raised inside export and compile: not the user's to see."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        warnings.simplefilter("ignore", DeprecationWarning)
        yield


def built(directory: str, name: str, key: str, build: Callable[[Path], None],
          on_build: Callable[[Path], None] = lambda path: None, root: Path | None = None,
          on_distrust: Callable[[Path, str], None] = lambda path, why: None) -> Path:
    """The library `name`-`key`.so in the cache's `directory`: there already with the digest omni recorded, or
    made now by `build(path)` (`on_build(path)` first, so a caller can say it is compiling) and recorded. A
    file at that name that omni cannot prove it made (no digest, or one its bytes do not match) is removed
    and built again, `on_distrust(path, why)` first. One process builds a key at a time; what a build that
    was stopped left (a process ended at once by Ctrl-C while loading, or killed) is removed by the next one,
    which holds the key's lock, so nothing else can be writing it. Raises `CacheRefused` for a cache folder
    others can write or another user owns."""
    folder = cache.cache_dir(directory, root=root)
    path = folder / f"{name}-{key}.so"
    if cache.verified(path):
        return path
    on_build(path)
    with _locked(folder / f"{name}-{key}.lock"):
        if cache.verified(path):  # another process built it while this one waited
            return path
        if path.exists() or cache.digest_path(path).exists():
            why = "its digest does not match" if cache.digest_path(path).exists() else "it has no digest"
            on_distrust(path, why)
            cache.discard(path)
        for stale in folder.glob(f"{name}-{key}.partial-*"):
            shutil.rmtree(stale, ignore_errors=True)
        build(path)
        cache.record(path)
    return path


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An exclusive lock on `path` for the block (POSIX flock; where there is none, no lock: two builds then
    both compile, and each still leaves a whole file)."""
    try:
        import fcntl
    except ImportError:
        yield
        return
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


class _ConstantEntry(ctypes.Structure):  # AOTInductorConstantMapEntry: {const char* name; AtenTensorHandle handle}
    _fields_ = [("name", ctypes.c_char_p), ("handle", ctypes.c_void_p)]


_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype, _capsule_pointer.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype, _capsule_new.argtypes = ctypes.py_object, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]


def _handles(tensors: list[torch.Tensor]) -> tuple[list, list[int]]:
    """New AtenTensorHandles (each a heap at::Tensor sharing the tensor's storage): torch's capsules, and the
    raw pointers they hold."""
    capsules = torch._C._aoti.unsafe_alloc_void_ptrs_from_tensors(tensors)
    return capsules, [_capsule_pointer(c, None) for c in capsules]


class CompiledFile:
    """A library `compile_to` made, loaded with `constants` (its constants' original names -> the tensors it
    reads, by reference) and `models` model instances (one per thread that may run it at once)."""

    def __init__(self, library: Path, constants: dict[str, torch.Tensor], models: int = 1):
        self.path = library
        if not cache.verified(library):  # never run code omni cannot prove it compiled
            raise CacheRefused(f"{library} was not made by omni (no digest beside it, or one its bytes do not "
                               "match); not loading it")
        lib = ctypes.CDLL(str(library))
        c = ctypes
        handle = c.c_void_p()
        lib.AOTInductorModelContainerCreateWithDevice.argtypes = [c.POINTER(c.c_void_p), c.c_size_t, c.c_char_p,
                                                                 c.c_char_p]
        lib.AOTInductorModelContainerGetNumConstants.argtypes = [c.c_void_p, c.POINTER(c.c_size_t)]
        lib.AOTInductorModelContainerGetNumOutputs.argtypes = [c.c_void_p, c.POINTER(c.c_size_t)]
        for getter in (lib.AOTInductorModelContainerGetConstantName, lib.AOTInductorModelContainerGetConstantOriginalFQN):
            getter.argtypes = [c.c_void_p, c.c_size_t, c.POINTER(c.c_char_p)]
        lib.AOTInductorModelContainerUpdateUserManagedConstantBufferPairs.argtypes = [
            c.c_void_p, c.POINTER(_ConstantEntry), c.c_size_t, c.c_bool, c.c_bool]
        lib.AOTInductorModelContainerRun.argtypes = [c.c_void_p, c.POINTER(c.c_void_p), c.c_size_t,
                                                     c.POINTER(c.c_void_p), c.c_size_t, c.c_void_p, c.c_void_p]
        lib.AOTInductorModelContainerDelete.argtypes = [c.c_void_p]
        self._lib, self._container, self._constants = lib, None, []
        self._check(lib.AOTInductorModelContainerCreateWithDevice(c.byref(handle), max(1, models), b"cpu", None),
                    "create")
        self._container = handle
        count, outputs = c.c_size_t(), c.c_size_t()
        self._check(lib.AOTInductorModelContainerGetNumConstants(handle, c.byref(count)), "count constants")
        self._check(lib.AOTInductorModelContainerGetNumOutputs(handle, c.byref(outputs)), "count outputs")
        self.outputs = outputs.value
        names, tensors = [], []
        for index in range(count.value):
            name, original = c.c_char_p(), c.c_char_p()
            self._check(lib.AOTInductorModelContainerGetConstantName(handle, index, c.byref(name)), "name")
            self._check(lib.AOTInductorModelContainerGetConstantOriginalFQN(handle, index, c.byref(original)), "name")
            fqn = original.value.decode()
            if fqn not in constants:
                raise ValueError(f"{library.name} wants a tensor this model does not have: {fqn}")
            names.append(name.value)
            tensors.append(constants[fqn].contiguous())
        if names:
            # user managed: the container reads these tensors where they are; the handles stay ours (freed in close)
            capsules, pointers = _handles(tensors)
            self._constants = capsules
            entries = (_ConstantEntry * len(names))(*(_ConstantEntry(n, p) for n, p in zip(names, pointers, strict=True)))
            self._check(lib.AOTInductorModelContainerUpdateUserManagedConstantBufferPairs(
                handle, entries, len(names), False, True), "hand over its constants")

    def _check(self, error: int, what: str) -> None:
        if error:
            raise RuntimeError(f"{self.path.name}: AOTInductor could not {what} (error {error})")

    def run(self, inputs: list[torch.Tensor]) -> list[torch.Tensor]:
        """The function's outputs for `inputs` (contiguous, as exported); the GIL is let go for the call."""
        _, pointers = _handles(inputs)  # the run takes these handles over and frees them
        ins = (ctypes.c_void_p * len(pointers))(*pointers)
        outs = (ctypes.c_void_p * self.outputs)()
        self._check(self._lib.AOTInductorModelContainerRun(self._container, ins, len(pointers), outs, self.outputs,
                                                           None, None), "run")
        return torch._C._aoti.alloc_tensors_by_stealing_from_void_ptrs([_capsule_new(p, None, None) for p in outs])

    def close(self) -> None:
        if self._container is not None:
            self._lib.AOTInductorModelContainerDelete(self._container)
            self._container = None
        if self._constants:  # our handles on the constants: taken back as tensors and dropped
            torch._C._aoti.alloc_tensors_by_stealing_from_void_ptrs(self._constants)
            self._constants = []

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()
