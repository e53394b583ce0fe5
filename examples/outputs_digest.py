"""A digest of what the engine and the sampler make, to check that a change to either changed no bit.

    for tree in /path/to/old /path/to/new; do PYTHONPATH=$tree python examples/outputs_digest.py; done

Equal lines mean equal outputs. "engine": the tokens, samples and rollout behaviour columns (log-
probabilities, entropies) of eight toy-card requests (echo and chat, both voices), served and rolled out,
one request per call and batched. "sampler": tokens and behaviour from `Sampler.distribution`/`draw` on
random logits over a sweep of settings (greedy and tempered, top-k, top-p, repetition penalty, one row
and three, two vocabulary sizes). The tests check that batching and recording change nothing within one
tree; this compares two trees.
"""

from __future__ import annotations

import hashlib
import sys

import numpy as np

from omni_cli.api import load
from omni_cli.engine import Engine
from omni_cli.loops.sampling import Sampler
from omni_cli.rollout import behaviour
from omni_cli.spec import SpeakRequest
from omni_cli.spec.card import SamplingSpec

TEXTS = ["Hello, world", "A somewhat longer sentence, to make the lengths ragged.", "Answer me", "Good morning!"]


def add(h, value) -> None:
    h.update(value.tobytes() + str(value.dtype).encode() if isinstance(value, np.ndarray) else repr(value).encode())


def engine_digest() -> str:
    h = hashlib.sha256()
    program = load("qwen2_5_omni_toy")
    for profile in ("serve", "rollout"):
        for max_batch in (1, 16):
            engine = Engine(program, max_batch=max_batch)
            handles = [engine.submit(SpeakRequest(t, seed=i, profile=profile, mode="chat" if i % 2 else "echo",
                                                  max_tokens=12 if i % 2 else None, voice="tenor" if i == 2 else None),
                                     collect=True) for i, t in enumerate(TEXTS * 2)]
            for _ in engine.events():
                pass
            for result in (handle.result() for handle in handles):
                add(h, result.tokens)
                add(h, result.samples)
                for loop, columns in sorted(behaviour(result).items()):
                    for name, column in sorted(columns.items()):
                        add(h, (loop, name))
                        add(h, column)
    return h.hexdigest()[:16]


def sampler_digest() -> str:
    h = hashlib.sha256()
    rs = np.random.default_rng(7)
    for temperature in (0.0, 0.7, 1.0, 1.3):
        for top_k in (0, 1, 5, 24, 200):
            for top_p in (1.0, 0.9, 0.3):
                for penalty in (1.0, 1.1):
                    spec = SamplingSpec(temperature=temperature, top_k=top_k, top_p=top_p, repetition_penalty=penalty)
                    sampler = Sampler(spec, {0, 3}, {5})
                    for vocab in (67, 300):
                        for rows in (1, 3):
                            logits = [rs.standard_normal(vocab).astype(np.float32) * 3 for _ in range(rows)]
                            histories = [list(rs.integers(0, vocab, 6)) for _ in range(rows)]
                            allow = [bool(rs.integers(2)) for _ in range(rows)]
                            seeds = [int(rs.integers(1000)) for _ in range(rows)]
                            drawn = sampler.distribution(logits, histories, allow)
                            tokens = sampler.draw(drawn, [np.random.default_rng(s) for s in seeds])
                            add(h, tokens)
                            for row, token in enumerate(tokens):
                                add(h, drawn.behaviour(row, token))
                                add(h, drawn.behaviour(row, (token + 1) % vocab))
    return h.hexdigest()[:16]


def main() -> int:
    print(f"engine {engine_digest()} sampler {sampler_digest()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
