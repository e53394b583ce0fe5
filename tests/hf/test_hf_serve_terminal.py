"""`omni serve` on a real checkpoint, as a person starts it in a terminal: the load and the warm-up each show
on one line that the address line then replaces (a pipe's first line stays the address: tests/serve)."""

from __future__ import annotations

import os
import re

import pytest
from terminal_helpers import ROOT, serve_on_a_terminal

pytest.importorskip("torch")
pytest.importorskip("transformers")


def test_a_terminal_sees_the_load_and_the_warm_up_then_only_the_address_line(tiny_checkpoint):
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("OMNI_")}, "PYTHONPATH": str(ROOT),
           "COLUMNS": "80", "LINES": "24", "TERM": "xterm"}
    seen, status = serve_on_a_terminal(["-c", "qwen2_5_omni", "--model-path", str(tiny_checkpoint), "--port", "0"], env)
    assert status == 130
    text = seen.decode("utf-8", "replace")
    loading, warming = text.find("loading weights"), text.find("omni serve: warming up")
    address = text.find("omni serve: qwen2_5_omni on http://127.0.0.1:")
    assert 0 <= loading < warming < address, text  # the load's progress line, then the warm-up's, then the address
    assert re.search(r"tensors", text[loading:warming]), text  # the load counts what it reads
    assert text[warming:address].endswith("\r\x1b[K"), text  # the warm-up note taken back before the address
    assert "Traceback" not in text
