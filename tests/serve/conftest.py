"""Servers for the serve tests: a real uvicorn on a free loopback port, in this process, one per module."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

try:  # the serve extra: without it these tests are not collected (the rest of the suite runs)
    import starlette  # noqa: F401
    import uvicorn  # noqa: F401
except ImportError:
    collect_ignore_glob = ["test_*.py"]
else:
    from serve_helpers import serve

    from omni_cli.audio.encode import pcm16_bytes
    from omni_cli.engine import Engine
    from omni_cli.spec import SpeakRequest


@pytest.fixture(scope="module")
def server(toy):
    served = serve(toy, concurrency=16, max_queue=64)
    yield served
    served.server.stop()


@pytest.fixture(scope="session")
def solo_pcm(toy):
    """s16le bytes of one request run alone through its own engine (the reference every response must equal)."""
    cache = {}
    lock = threading.Lock()

    def run(text, voice=None, seed=0, mode=None):
        key = (text, voice, seed, mode)
        with lock:
            if key not in cache:
                result = Engine(toy).submit(SpeakRequest(text, mode=mode, voice=voice, seed=seed), collect=True).result()
                assert result.status.value == "finished" and result.samples.size > 0
                cache[key] = pcm16_bytes(result.samples)
        return cache[key]

    return run
