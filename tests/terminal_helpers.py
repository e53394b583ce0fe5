"""`omni serve` with its stderr on a pseudo-terminal, as a person starts it (imported by the serve tests)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def serve_on_a_terminal(args: list[str], env: dict[str, str], timeout: float = 120) -> tuple[bytes, int]:
    """`omni serve ARGS`, stderr on a pty: what the terminal got up to the address line ("Ctrl-C stops"),
    and the exit status once Ctrl-C (SIGINT) stopped it."""
    import pty

    leader, follower = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "omni_cli.cli", "serve", *args], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=follower, env=env, cwd=ROOT)
    os.close(follower)
    seen = b""
    try:
        deadline = time.monotonic() + timeout
        while b"Ctrl-C stops" not in seen and time.monotonic() < deadline:
            seen += os.read(leader, 65536)
        proc.send_signal(signal.SIGINT)
        return seen, proc.wait(60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(leader)
