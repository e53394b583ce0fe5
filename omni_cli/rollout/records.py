"""A rollout sample on disk: one .npz of named arrays (behaviour columns, float32 audio, a JSON header).

Why .npz: a trainer reads a sample with one `np.load` (no parser: each column is a typed array,
float64 log-probabilities bit for bit as recorded), needs nothing beyond numpy, and each sample is
its own file, written whole when the sample ends, so a killed run keeps every finished sample.
A columnar file per run (Arrow, Parquet) would add a dependency and could only be finished at the end.
"""

from __future__ import annotations

import hashlib
import json
import platform
import sys
import zipfile
import zlib
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
from numpy import load as read_npz  # by name: tests/test_spec_safety.py flags every `.load`

from .. import __version__
from ..loops.recorder import AR_COLUMNS, AUDIO_COLUMNS
from ..loops.residuals import RESIDUAL_COLUMNS, RESIDUAL_KEY

FORMAT = "omni-rollout/1"
META_KEY = "meta"  # a 0-d unicode array holding the sample's JSON header (loads without pickle)
AUDIO_KEY = "audio"  # float32 mono samples in [-1, 1], exactly as the vocoder made them


@dataclass
class Sample:
    """One recorded sample: its header, each loop's behaviour columns, its audio."""

    meta: dict[str, Any]
    loops: dict[str, dict[str, np.ndarray]]  # loop id -> column name -> array (see loops/recorder.py)
    audio: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float32))
    path: Path | None = None

    @property
    def tokens(self) -> dict[str, list]:
        """Each AR loop's recorded tokens (what re-scoring teacher-forces), and as "<loop>/residual_token" each
        frame's residual codes where the loop's talker fills them itself."""
        tokens: dict[str, list] = {}
        for name, cols in self.loops.items():
            if "token" in cols:
                tokens[name] = cols["token"].tolist()
            if RESIDUAL_KEY in cols:
                tokens[f"{name}/{RESIDUAL_KEY}"] = cols[RESIDUAL_KEY].tolist()
        return tokens


def behaviour(result: Any) -> dict[str, dict[str, np.ndarray]]:
    """Each loop's behaviour columns from a RequestResult (empty when the request was served, not rolled out)."""
    return {name: res.outputs["behaviour"] for name, res in result.loops.items() if "behaviour" in res.outputs}


def save_sample(path: Path, sample: Sample) -> None:
    """Write the .npz whole, then rename it into place: a reader never sees half a sample."""
    arrays = {f"{loop}/{name}": column for loop, cols in sample.loops.items() for name, column in cols.items()}
    arrays[META_KEY] = np.array(json.dumps(sample.meta, sort_keys=True))
    arrays[AUDIO_KEY] = np.asarray(sample.audio, dtype=np.float32)
    partial = path.with_name(path.name + ".partial")
    try:
        with open(partial, "wb") as f:
            np.savez(f, **arrays)
        partial.replace(path)
    except BaseException:  # Ctrl-C or a full disk mid-write: no half file left behind
        partial.unlink(missing_ok=True)
        raise


def load_sample(path: str | Path) -> Sample:
    """Read one sample file written by `omni rollout` (ValueError for a file that is not one)."""
    path = Path(path)
    try:
        with read_npz(path, allow_pickle=False) as data:  # no pickle: arrays and one JSON string only
            meta = json.loads(str(data[META_KEY]))
            loops: dict[str, dict[str, np.ndarray]] = {}
            for key in data.files:
                if "/" in key:
                    loop, name = key.split("/", 1)
                    loops.setdefault(loop, {})[name] = data[key]
            audio = data[AUDIO_KEY]
    except (OSError, KeyError, ValueError, EOFError, zipfile.BadZipFile, zlib.error) as exc:  # cut short, or not one
        raise ValueError(f"{path}: not a rollout sample ({' '.join(str(exc).split()) or type(exc).__name__})") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        found = meta.get("format") if isinstance(meta, dict) else None
        raise ValueError(f"{path}: format {found!r}, expected {FORMAT!r}")
    problem = _meta_problem(meta) or _columns_problem(loops, audio)
    if problem:
        raise ValueError(f"{path}: not a rollout sample ({problem})")
    return Sample(meta, loops, audio, path)


# what the header must hold for re-scoring (key: allowed types), and what each column must be
_REQUEST = {"text": (str,), "seed": (int,), "mode": (str, type(None)), "voice": (str, type(None)),
            "handoff": (str, type(None)), "max_tokens": (int, type(None))}
_KINDS = {np.int64: "i", np.float64: "f", np.bool_: "b"}


def _meta_problem(meta: dict[str, Any]) -> str | None:
    for key, kind in (("request", dict), ("card", dict), ("program", dict), ("settings", dict), ("backend", str)):
        if not isinstance(meta.get(key), kind):
            return f"its header's {key} is missing or not a {'mapping' if kind is dict else 'string'}"
    for key, kinds in _REQUEST.items():
        value = meta["request"].get(key)
        if not isinstance(value, kinds) or isinstance(value, bool):
            return f"its header's request.{key} is missing or of the wrong type"
    for part in ("card", "program"):
        if not isinstance(meta[part].get("source"), str):
            return f"its header's {part}.source is missing or not a string"
    return None


def _columns_problem(loops: dict[str, dict[str, np.ndarray]], audio: np.ndarray) -> str | None:
    if audio.ndim != 1 or audio.dtype.kind != "f":
        return f"{AUDIO_KEY} is {audio.dtype} of shape {audio.shape}, not a float vector"
    for loop, cols in loops.items():
        spec = AR_COLUMNS if "token" in cols else AUDIO_COLUMNS
        lengths = set()
        for name, dtype in spec.items():
            column = cols.get(name)
            if column is None:
                return f"{loop}/{name} is missing"
            if column.ndim != 1 or column.dtype.kind != _KINDS[dtype]:
                return f"{loop}/{name} is {column.dtype} of shape {column.shape}, not a vector of {np.dtype(dtype)}"
            lengths.add(len(column))
        problem = _residual_problem(loop, cols) if spec is AR_COLUMNS else None
        if problem:
            return problem
        if len(lengths) > 1:
            return f"{loop}'s columns differ in length ({', '.join(map(str, sorted(lengths)))})"
    return None


def _residual_problem(loop: str, cols: dict[str, np.ndarray]) -> str | None:
    """A talker's residual columns: all or none, each [steps, groups] of its kind, as long as its tokens."""
    present = [name for name in RESIDUAL_COLUMNS if name in cols]
    if not present:
        return None
    shapes = set()
    for name, dtype in RESIDUAL_COLUMNS.items():
        column = cols.get(name)
        if column is None:
            return f"{loop}/{name} is missing"
        if column.ndim != 2 or column.dtype.kind != _KINDS[dtype] or len(column) != len(cols["token"]):
            return (f"{loop}/{name} is {column.dtype} of shape {column.shape}, not {np.dtype(dtype)} of "
                    f"{len(cols['token'])} rows")
        shapes.add(column.shape)
    return f"{loop}'s residual columns differ in shape" if len(shapes) > 1 else None


def load_run(directory: str | Path) -> list[Sample]:
    """Every sample of a rollout directory, in prompt then sample order."""
    directory = Path(directory)
    if not directory.is_dir():
        raise ValueError(f"{directory}: not a directory")
    paths = sorted(directory.glob("*.npz"))
    if not paths:
        raise ValueError(f"{directory}: no rollout samples (*.npz) in it")
    return [load_sample(p) for p in paths]


def file_identity(source: str) -> dict[str, Any]:
    """Where a card or program came from and a hash of its bytes (to tell later whether it changed)."""
    path = Path(source)
    digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None
    return {"source": source, "sha256": digest}


def versions(backends: set[str]) -> dict[str, str]:
    """What produced the numbers: ours, numpy, Python, and for the hf backend torch and transformers."""
    found = {"omni_cli": __version__, "numpy": np.__version__, "python": platform.python_version()}
    if "hf" in backends:  # by package metadata: importing torch here would break the layering
        for name in ("torch", "transformers"):
            try:
                found[name] = metadata.version(name)
            except metadata.PackageNotFoundError:
                found[name] = "missing"
    found["platform"] = f"{sys.platform}-{platform.machine()}"
    return found
