"""`omni serve` serves the card `omni speak` speaks with: the default, or --card / OMNI_CARD alike, and its
first line names the card and its voices."""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from omni_cli.cli import serve, session
from omni_cli.cli.app import app
from omni_cli.defaults import CARD_ENV, DEFAULT_CARD


@pytest.fixture
def started(monkeypatch):
    """Run `omni serve` up to the point it listens; return the card it built and what it said on stderr."""
    seen = {}
    real_open = session.open_engine

    def open_engine(options, on_load=None):
        seen["card"] = options.card
        return real_open(options, on_load)

    def serve_forever(engine, card, options, sock):  # where it would listen: the test has what it needs
        sock.close()
        seen["served"] = card

    monkeypatch.setattr(session, "open_engine", open_engine)
    monkeypatch.setattr("omni_cli.serve.server.serve_forever", serve_forever)

    def run(args, env):
        seen.clear()
        result = CliRunner().invoke(app, ["serve", "--port", "0", "--no-warm-up", *args], env=env)
        assert result.exit_code == 0 and seen["served"] == seen["card"], result.output
        return seen["card"], result.output

    return run


def test_without_card_it_serves_the_default_card_and_names_its_voices(started):
    card, said = started([], {CARD_ENV: None})
    assert card == DEFAULT_CARD == "piper_joe"
    assert re.search(r"omni serve: piper_joe on http://127\.0\.0\.1:\d+ \(voices: joe; concurrency 8", said), said


def test_omni_card_and_card_option_are_honoured_alike(started):
    by_env, said_env = started([], {CARD_ENV: "qwen2_5_omni_toy"})
    by_option, said_option = started(["--card", "qwen2_5_omni_toy"], {CARD_ENV: None})
    assert by_env == by_option == "qwen2_5_omni_toy"
    for said in (said_env, said_option):
        assert "omni serve: qwen2_5_omni_toy on http://" in said and "(voices: alto, tenor;" in said, said


def test_serve_speak_and_trace_share_one_default():
    import inspect

    from omni_cli.cli import speak, trace

    defaults = {name: inspect.signature(fn).parameters["card"].default
                for name, fn in (("serve", serve.serve), ("speak", speak.speak), ("trace", trace.run))}
    assert set(defaults.values()) == {DEFAULT_CARD}, defaults
