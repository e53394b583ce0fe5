"""Helpers for the serve tests: a server on a free loopback port in this process, and its trace."""

from __future__ import annotations

import time

from omni_cli.engine import Engine
from omni_cli.serve.app import ServeOptions
from omni_cli.serve.server import start_background

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
