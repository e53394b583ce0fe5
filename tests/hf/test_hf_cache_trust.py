"""`omni speak` on the hf backend with a cache folder it must not trust: one line saying so, the compiled parts
run eager, and the run ends well (exit 0). The file-level cases (planted, cut short, another user's folder) are
in test_hf_aoti.py."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_a_cache_folder_others_can_write_is_refused_in_one_line_and_the_run_goes_on(tiny_checkpoint, tmp_path):
    loose = tmp_path / "shared-cache"
    loose.mkdir()
    os.chmod(loose, 0o777)
    cmd = [sys.executable, "-m", "omni_cli.cli", "speak", "a", "--card", "qwen2_5_omni", "--model-path",
           str(tiny_checkpoint), "--seed", "1", "--allow-no-audio", "-o", str(tmp_path / "a.wav")]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT), "OMNI_CLI_CACHE": str(loose)}
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=600, env=env)
    assert done.returncode == 0, done.stderr
    said = [line for line in done.stderr.splitlines() if str(loose) in line]
    assert said == [f"omni: compiled parts run uncompiled: cache folder {loose} is writable by other users; "
                    f"refusing to use it (chmod go-w {loose}, or set OMNI_CLI_CACHE to a private folder)"]
    assert list(loose.iterdir()) == []  # nothing made in it, nothing loaded from it
    assert "Traceback" not in done.stderr
