"""Memory the engine reserves against memory the process really uses, for 1 and for 8 requests at once.

    python examples/hf_memory.py CHECKPOINT [--requests 1 8] [--dtype float32]

Prints one JSON line per request count: the engine's reservation at its peak (KV caches and hand-off
state sized from the card's limits, vocoder state, the largest step), and the measured peak resident
set above the loaded, warmed-up process (Linux: VmHWM after resetting it through /proc/self/clear_refs).
Run it as a fresh process with MALLOC_MMAP_THRESHOLD_=65536 (the script re-executes itself so) so that
glibc returns freed tensors to the system and the resident set follows what is live. `left_reserved`: what
the budget still holds after the requests ended, the primitives oneDNN cached for BigVGAN shapes this
process had not run (kept for good, counted once: omni_cli/backends/hf/onednn.py).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _status(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def _card(thinker_max: int, talker_max: int) -> Path:
    import tempfile

    import yaml

    card = yaml.safe_load((ROOT / "cards" / "qwen2_5_omni.yaml").read_text())
    card["loops"]["thinker_decode"]["max_tokens"] = thinker_max
    card["loops"]["talker_decode"]["max_tokens"] = talker_max
    card["loops"]["talker_decode"]["sampling"] = {"temperature": 0.0, "repetition_penalty": 1.05}
    path = Path(tempfile.mkdtemp()) / "card.yaml"
    path.write_text(yaml.safe_dump(card))
    return path


def measure(checkpoint: str, counts: list[int], dtype: str) -> list[dict]:
    import torch

    from omni_cli.api import load
    from omni_cli.engine import Engine
    from omni_cli.spec.request import SpeakRequest

    torch.set_num_threads(1)
    program = load(str(_card(12, 40)), settings={"model_path": checkpoint, "dtype": dtype})
    texts = ["hi there", "ih there", "oh there", "hi where", "ah there", "hi, there", "hi then", "oh where"]

    def run(n: int) -> tuple[int, int]:
        engine = Engine(program)
        for i in range(n):
            engine.submit(SpeakRequest(texts[i % len(texts)], mode="echo", seed=i, request_id=f"m{i}"))
        for _ in engine.events():
            pass
        return engine.budget.peak_reserved, engine.budget.reserved

    run(1)  # warm-up: kernels, thread pools and the caches that stay
    out = []
    for n in counts:
        gc.collect()
        Path("/proc/self/clear_refs").write_text("5")  # VmHWM := VmRSS
        before = _status("VmRSS")
        reserved, left = run(n)
        measured = _status("VmHWM") - before
        out.append({"requests": n, "reserved_bytes": reserved, "measured_bytes": measured,
                    "ratio": round(measured / reserved, 3), "left_reserved": left})
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkpoint")
    parser.add_argument("--requests", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--dtype", default="float32")
    args = parser.parse_args()
    if os.environ.get("MALLOC_MMAP_THRESHOLD_") != "65536":
        os.execve(sys.executable, [sys.executable, *sys.argv], {**os.environ, "MALLOC_MMAP_THRESHOLD_": "65536"})
    for row in measure(args.checkpoint, args.requests, args.dtype):
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
