"""What sampling the residual codebooks costs a Qwen3-Omni talker frame: greedy (A) against sampled (B), alternated.

    python -m omni_cli.backends.hf.qwen3_tiny ./tiny-qwen3
    python examples/hf_qwen3_residuals.py ./tiny-qwen3 [--rounds 5] [--concurrency 1]

Both runs sample the talker's first codebook group with the card's settings; A's residual_sampling is greedy,
B's the card's (generate's top_k 50, top_p 0.8). Each round runs A then B, `--concurrency` chat requests at once,
and prints the median talker frame WorkUnit time (a batch's call time, shared by its rows) and B's ratio to A.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

import yaml

from omni_cli.api import load
from omni_cli.engine import Engine
from omni_cli.spec.request import SpeakRequest

ROOT = Path(__file__).resolve().parents[1]


def programs(checkpoint: str, directory: Path) -> dict:
    card = yaml.safe_load((ROOT / "cards" / "qwen3_omni.yaml").read_text())
    card["loops"]["thinker_decode"]["max_tokens"] = 12
    card["loops"]["talker_decode"]["max_tokens"] = 60
    out = {}
    for name, temperature in (("greedy", 0.0), ("sampled", 1.0)):
        card["loops"]["talker_decode"]["residual_sampling"] = {"temperature": temperature, "top_k": 50, "top_p": 0.8}
        path = directory / f"{name}.yaml"
        path.write_text(yaml.safe_dump(card))
        out[name] = load(str(path), settings={"model_path": checkpoint})
    return out


def frame_ms(program, seed: int, concurrency: int) -> tuple[float, int]:
    """Median talker frame WorkUnit time (ms) and how many ran."""
    durations: list[float] = []
    engine = Engine(program)
    engine.subscribe(lambda e: durations.append(e.dur_s)
                     if getattr(e, "kind", None) == "ar_token" and e.loop == "talker_decode" else None)
    handles = [engine.submit(SpeakRequest("hello there", mode="chat", seed=seed + i), collect=True)
               for i in range(concurrency)]
    for _ in engine.events():
        pass
    for handle in handles:
        assert handle.result().error is None, handle.result().error
    return 1000 * statistics.median(durations), len(durations)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkpoint")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--concurrency", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        runs = programs(args.checkpoint, Path(directory))
        for program in runs.values():  # warm
            frame_ms(program, 0, args.concurrency)
        ratios = []
        for r in range(args.rounds):
            (a, na), (b, nb) = (frame_ms(runs[name], 10 * r, args.concurrency) for name in ("greedy", "sampled"))
            ratios.append(b / a)
            print(f"round {r}: greedy {a:.2f} ms ({na} frames), sampled {b:.2f} ms ({nb} frames), ratio {b / a:.3f}")
    print(f"sampled / greedy residuals, per talker frame WorkUnit, concurrency {args.concurrency}: median "
          f"{statistics.median(ratios):.3f} ({min(ratios):.3f} to {max(ratios):.3f})")


if __name__ == "__main__":
    main()
