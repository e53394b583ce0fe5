"""Servers for the serve tests: a real uvicorn on a free loopback port, in this process, one per module."""

from __future__ import annotations

import sys
import threading
import time
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
    raise pytest.skip.Exception("omni serve needs the serve extra", allow_module_level=True) from None

from omni_cli.audio.encode import pcm16_bytes  # noqa: E402
from omni_cli.engine import Engine  # noqa: E402
from omni_cli.serve.app import ServeOptions  # noqa: E402
from omni_cli.serve.server import start_background  # noqa: E402
from omni_cli.spec import SpeakRequest  # noqa: E402

CARD = "qwen2_5_omni_toy"
LONG_TEXT = " ".join(["word"] * 390)  # 1,949 characters: seconds of engine time, two minutes of audio
MEDIUM_TEXT = " ".join(["word"] * 24)  # 119 characters: a fraction of a second, many chunks


class Recorder:
    """Trace events as the engine thread makes them (list.append is atomic)."""

    def __init__(self):
        self.events = []

    def __call__(self, event):
        self.events.append(event)

    def of(self, request_id):
        return [e for e in list(self.events) if e.request_id == request_id]

    def phase(self, request_id, phase):
        found = [e for e in self.of(request_id) if getattr(e, "phase", None) == phase]
        return found[0] if found else None


class Served:
    def __init__(self, server, recorder):
        self.server = server
        self.url = server.url
        self.ctx = server.context
        self.engine = server.context.engine
        self.trace = recorder

    def wait_idle(self, timeout_s=30.0):
        """Until no request is open on the server and the engine has nothing left to run."""
        deadline = time.monotonic() + timeout_s
        while self.ctx.worker.active or not self.engine.is_idle:
            assert time.monotonic() < deadline, "the server did not become idle"
            time.sleep(0.01)


def serve(program, **options):
    engine_options = {k: options.pop(k) for k in ("memory_budget_bytes",) if k in options}
    engine = Engine(program, **engine_options)
    recorder = Recorder()
    engine.subscribe(recorder)
    return Served(start_background(engine, CARD, ServeOptions(**options)), recorder)


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
