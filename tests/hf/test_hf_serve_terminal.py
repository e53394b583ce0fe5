"""`omni serve` on a real checkpoint, as a person starts it in a terminal: the load and the warm-up each show
on one line that the address line then replaces (a pipe's first line stays the address: tests/serve)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

ROOT = Path(__file__).resolve().parents[2]


def test_a_terminal_sees_the_load_and_the_warm_up_then_only_the_address_line(tiny_checkpoint):
    import pty

    env = {**{k: v for k, v in os.environ.items() if not k.startswith("OMNI_")}, "PYTHONPATH": str(ROOT),
           "COLUMNS": "80", "LINES": "24", "TERM": "xterm"}
    leader, follower = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "omni_cli.cli", "serve", "-c", "qwen2_5_omni", "--model-path",
                             str(tiny_checkpoint), "--port", "0"],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=follower, env=env, cwd=ROOT)
    os.close(follower)
    seen = b""
    try:
        deadline = time.monotonic() + 120
        while b"Ctrl-C stops" not in seen and time.monotonic() < deadline:
            seen += os.read(leader, 65536)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(60) == 130
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(leader)
    text = seen.decode("utf-8", "replace")
    loading, warming = text.find("loading weights"), text.find("omni serve: warming up")
    address = text.find("omni serve: qwen2_5_omni on http://127.0.0.1:")
    assert 0 <= loading < warming < address, text  # the load's progress line, then the warm-up's, then the address
    assert re.search(r"tensors", text[loading:warming]), text  # the load counts what it reads
    assert text[warming:address].endswith("\r\x1b[K"), text  # the warm-up note taken back before the address
    assert "Traceback" not in text
