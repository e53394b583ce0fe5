"""The voice's split graphs, built once per voice file into omni's cache and read from it on later runs.

Splitting the voice's graph (graph.py) needs the `onnx` package and seconds of work; its result depends only
on the voice file and on how we split it. So the parts are written to `cache_dir("piper", KEY)`, where KEY is
the voice file's SHA-256, GRAPH_VERSION and onnxruntime's version (the parts are kept as its CPU provider
optimizes them, so a session on them starts sooner), and each later run reads the bytes the cache verified straight
into onnxruntime, without importing `onnx`. Hashing the voice costs a read of the whole file; its digest is
itself kept in the cache under the file's path, size and modification time, so an unchanged voice is not
hashed again. A cache that is refused or cannot be written costs one note and a build in memory.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, replace
from pathlib import Path

from ... import cache
from .sessions import optimized, runtime_version
from .stream_state import StreamSpec

GRAPH_VERSION = 2  # bump when graph.py or streaming.py would build a voice's parts differently
PARTS = ("acoustic", "decoder")
META = "meta.json"


@dataclass(frozen=True)
class SplitGraphs:
    """The voice's two parts as serialized ONNX, and the facts the components need about them."""

    acoustic: bytes
    decoder: bytes  # the streaming decoder (streaming.py)
    channels: int  # channels of a latent frame
    samples_per_frame: int
    stream: StreamSpec  # the streaming decoder's states and delay
    note: str | None = None  # one line when the cache could not be used
    optimized: bool = False  # each part as `sessions.optimized` made it (sessions on it skip that work)


def split_graphs(model_path: Path) -> SplitGraphs:
    """The parts from the cache when it holds them for this voice file, else built now (and kept)."""
    try:
        key = f"{file_digest(model_path)[:32]}-v{GRAPH_VERSION}-ort{runtime_version()}"
        folder = cache.cache_dir("piper", key)
    except (cache.CacheRefused, OSError) as error:
        return replace(build(model_path), note=f"the voice's split graphs are built in memory: {_reason(error)}")
    cached = read(folder)
    if cached is not None:
        return cached
    built = build(model_path, optimize=True)
    try:
        write(folder, built)
    except OSError as error:
        return replace(built, note=f"the voice's split graphs could not be kept in {folder}: {_reason(error)}")
    return built


def _reason(error: Exception) -> str:
    return str(error) if isinstance(error, cache.CacheRefused) else f"{type(error).__name__}: {error}"


def file_digest(path: Path) -> str:
    """A file's SHA-256 (the voice's, the lexicon's), remembered under its path, size and modification time."""
    info = path.stat()
    key = f"{path.resolve()}\0{info.st_size}\0{info.st_mtime_ns}"
    return cache.remembered_digest(cache.cache_dir("piper", "digests"), key, lambda: _hash_file(path))


def _hash_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def read(folder: Path) -> SplitGraphs | None:
    """The cached parts if every file is one omni recorded, else None (a stale or planted file is discarded)."""
    found = {}
    for name in (*[f"{part}.onnx" for part in PARTS], META):
        data = cache.read_verified(folder / name)
        if data is None:
            for stale in (*[f"{part}.onnx" for part in PARTS], META):
                cache.discard(folder / stale)
            return None
        found[name] = data
    try:
        meta = json.loads(found[META])
        channels, hop = int(meta["channels"]), int(meta["samples_per_frame"])
        stream = StreamSpec.from_json(meta["stream"])
    except (ValueError, KeyError, TypeError):
        return None
    return SplitGraphs(found["acoustic.onnx"], found["decoder.onnx"], channels, hop, stream, optimized=True)


def write(folder: Path, parts: SplitGraphs) -> None:
    """Each part, then the facts (each file written whole with its digest beside it)."""
    cache.write_artifact(folder / "acoustic.onnx", parts.acoustic)
    cache.write_artifact(folder / "decoder.onnx", parts.decoder)
    meta = {"channels": parts.channels, "samples_per_frame": parts.samples_per_frame, "stream": parts.stream.to_json()}
    cache.write_artifact(folder / META, json.dumps(meta).encode())


def build(model_path: Path, optimize: bool = False) -> SplitGraphs:
    """Split the voice's graph now (imports `onnx`); `optimize`: each part as onnxruntime optimizes it, to keep."""
    from . import graph, streaming

    model = graph.read_graph(model_path)
    channels = graph.frame_channels(model)
    decoder, stream = streaming.streaming_graph(graph.decoder_graph(model), graph.FRAMES, channels)
    parts = [graph.acoustic_graph(model).SerializeToString(), decoder.SerializeToString()]
    if optimize:
        parts = [optimized(part) for part in parts]
    return SplitGraphs(*parts, channels, graph.samples_per_frame(model), stream, optimized=optimize)
