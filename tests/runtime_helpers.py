"""Run requests alone or together through fresh engines (imported by the runtime tests)."""

from __future__ import annotations

from omni_cli.engine import Engine


def run_alone(program, request, **engine_options):
    engine = Engine(program, **engine_options)
    return engine.submit(request, collect=True).result()


def run_together(program, requests, **engine_options):
    engine = Engine(program, **engine_options)
    handles = [engine.submit(r, collect=True) for r in requests]
    for _ in engine.events():
        pass
    return engine, [h.result() for h in handles]
