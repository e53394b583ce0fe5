"""Vocoder chunking, measured: variants of the shipped card's vocoder side by side, in one run.

    python -m omni_cli.backends.hf.tiny ./tiny-omni
    python examples/hf_chunks.py ./tiny-omni [--requests 4] [--rounds 2] [--codes 200]
    python examples/hf_chunks.py ./tiny-omni --variant card: --variant overlap32:bigvgan_overlap_frames=32

Each round runs, for each variant in turn, `--requests` greedy chat utterances of `--codes` codes at
concurrency 1 and at concurrency `--requests`. A variant is NAME:KEY=VALUE,...: keys of the vocoder's
audio_decode loop (pace, chunk_codes, first_chunk_codes, first_audio_codes) or of the vocoder's params; the default
pair is the shipped card's doubling chunks ("double") beside `pace: slack` up to 400 codes
("slack"). It prints one JSON line per run and, per variant, the best and worst over rounds of TTFA p50,
latency p50, stall max, audio s per wall s, DiT windows per utterance and DiT forwards (windows batched
together run as one), and the worst waveform SNR against one whole-utterance chunk of the same codes (the
tokens are the same: greedy).
"""

from __future__ import annotations

import argparse
import json
from dataclasses import replace

import numpy as np


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkpoint")
    parser.add_argument("--requests", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--codes", type=int, default=200)
    parser.add_argument("--variant", action="append", metavar="NAME:KEY=VALUE,...")
    args = parser.parse_args()

    from omni_cli.api import load
    from omni_cli.bench import Workload, greedy_variant, run_workload
    from omni_cli.program import compile_program

    base = load("qwen2_5_omni", settings={"model_path": args.checkpoint})

    def variant(**changes):
        card = base.card
        loop_keys = {"pace", "chunk_codes", "first_chunk_codes", "first_audio_codes"}
        vocoder_loop = {k: v for k, v in changes.items() if k in loop_keys}
        params = {k: v for k, v in changes.items() if k not in loop_keys}
        loops = {name: replace(loop, **vocoder_loop) if loop.kind == "audio_decode" else loop
                 for name, loop in card.loops.items()}
        components = {name: replace(c, params={**c.params, **params}) if c.role == "vocoder" else c
                      for name, c in card.components.items()}
        program = compile_program(card.replaced(loops=loops, components=components), base.program, base.settings)
        return greedy_variant(program, {"thinker": 12, "talker": args.codes + 1}, talker_min=args.codes)

    chunkings = {name: variant(**changes) for name, changes in
                 map(_parse, args.variant or ["double:", "slack:pace=slack,chunk_codes=400"])}
    whole = variant(chunk_codes=0, first_chunk_codes=0, first_audio_codes=0)
    from omni_cli.backends.hf import token2wav

    # DiT windows (rows of noise) and forwards (windows batched together run as one); a chunk whose mel an
    # earlier window made (first_audio_codes) runs none
    windows, forwards, sample_window = [0], [0], token2wav.sample_window

    def counted_forward(dit, noise, *args, **kwargs):
        forwards[0] += 1
        windows[0] += noise.shape[0]
        return sample_window(dit, noise, *args, **kwargs)

    token2wav.sample_window = counted_forward
    work = Workload(num_requests=args.requests, text_chars=60, mode="chat")
    reference = run_workload(whole, work, "whole", keep_outputs=True).outputs
    figures: dict[tuple[str, str], list[dict]] = {}
    for round_ in range(args.rounds):
        for name, program in chunkings.items():
            for workload in (work, replace(work, concurrency=args.requests)):
                label = f"ours-{workload.concurrency}"
                windows[0] = forwards[0] = 0
                result = run_workload(program, workload, label, keep_outputs=True)
                s = result.summary()
                row = {"round": round_, "chunks": name, "run": label, "ttfa_p50_s": s["ttfa_p50_s"],
                       "latency_p50_s": s["latency_p50_s"], "stall_max_s": s["stall_max_s"],
                       "audio_s_per_wall_s": s["audio_s_per_wall_s"], "windows_per_utterance":
                       windows[0] / args.requests, "dit_forwards": forwards[0],
                       "min_snr_db": _worst_snr(reference, result.outputs)}
                figures.setdefault((name, label), []).append(row)
                print(json.dumps(row), flush=True)
    print("per chunking: best-worst over rounds")
    for (name, label), rows in figures.items():
        parts = [f"{key} {min(r[key] for r in rows):.3f}-{max(r[key] for r in rows):.3f}"
                 for key in ("ttfa_p50_s", "latency_p50_s", "stall_max_s", "audio_s_per_wall_s", "windows_per_utterance",
                              "dit_forwards")]
        print(f"  {name:<7}{label:<8}" + "; ".join(parts) + f"; worst SNR {min(r['min_snr_db'] for r in rows):.0f} dB")


def _parse(text: str) -> tuple[str, dict]:
    name, _, rest = text.partition(":")
    changes = {}
    for pair in filter(None, rest.split(",")):
        key, _, value = pair.partition("=")
        changes[key] = int(value) if value.lstrip("-").isdigit() else value
    return name, changes


def _worst_snr(reference, outputs) -> float:
    worst = float("inf")
    for ref, mine in zip(reference, outputs, strict=True):
        if list(ref.tokens.values()) != list(mine.tokens.values()):
            raise RuntimeError("a chunking changed the tokens: the waveforms cannot be compared")
        noise = float(np.sum((ref.samples - mine.samples) ** 2))
        if noise:
            worst = min(worst, 10 * np.log10(float(np.sum(ref.samples ** 2)) / noise))
    return worst


if __name__ == "__main__":
    main()
