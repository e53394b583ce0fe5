"""What the vocoder examples share: token2wav's modules from a checkpoint, one speaker's DiT inputs, a timer.

Not run on its own: `hf_vocoder_ab.py`, `hf_row_threads.py`, `hf_dit_blocks.py`, `hf_dit_compile.py`,
`hf_dit_ahead.py` and `hf_bigvgan_ahead.py` import it
(a script's own folder is on its path).
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass
from typing import Any


@dataclass
class Token2WavParts:
    bigvgan: Any  # Qwen2_5OmniToken2WavBigVGANModel
    dit: Any  # Qwen2_5OmniToken2WavDiTModel
    mel_dim: int
    cond: Any  # [1, enc_emb_dim]: a random speaker embedding, seeded
    features: Any  # that speaker's `speaker_features` (a random reference mel, seeded)
    settings: Any  # the card's ODE settings (dit.ODESettings())


def load_parts(checkpoint: str) -> Token2WavParts:
    """The checkpoint's token2wav, with one intra-op thread (as the hf components run by default)."""
    import torch
    from transformers import Qwen2_5OmniForConditionalGeneration
    from transformers.utils import logging

    logging.set_verbosity_error()  # the tiny checkpoint's config warnings are not the measurement
    from omni_cli.backends.hf import dit as ditmod

    torch.set_num_threads(1)
    model = Qwen2_5OmniForConditionalGeneration.from_pretrained(checkpoint).eval()
    bigvgan, dit = model.token2wav.code2wav_bigvgan_model, model.token2wav.code2wav_dit_model
    mel_dim = bigvgan.config.mel_dim
    cond = torch.randn(1, dit.config.enc_emb_dim, generator=torch.Generator().manual_seed(0))
    ref_mel = torch.randn(1, 40, mel_dim, generator=torch.Generator().manual_seed(1))
    settings = ditmod.ODESettings()
    return Token2WavParts(bigvgan, dit, mel_dim, cond, ditmod.speaker_features(dit, ref_mel, settings.is_guided),
                          settings)


def best_ms(call, repeats: int) -> float:
    """The fastest of `repeats` timed calls, after one untimed, in milliseconds."""
    call()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        best = min(best, time.perf_counter() - start)
    return best * 1e3


def in_two_halves(part, rows: int) -> None:
    """`part(0, rows // 2)` and `part(rows // 2, rows)` on two Python threads at once, one intra-op thread each,
    without gradients: a batch's rows as the vocoder's row threads split them."""
    import threading

    import torch

    def half(first: int, last: int) -> None:
        torch.set_num_threads(1)
        with torch.no_grad():
            part(first, last)

    threads = [threading.Thread(target=half, args=span) for span in ((0, rows // 2), (rows // 2, rows))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def window_arguments(doc: str, windows: str) -> argparse.Namespace:
    """The DiT examples' command line, `doc`'s first line its description: CHECKPOINT [--rounds N] [--repeats N]
    [--windows ROWSxFRAMES,...] (`windows` the default), the windows parsed into (rows, frames) pairs."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("checkpoint")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--windows", default=windows,
                        help="comma-separated ROWSxFRAMES (frames: a multiple of the DiT's 2 frames per code)")
    args = parser.parse_args()
    args.windows = [tuple(int(n) for n in window.split("x")) for window in args.windows.split(",")]
    return args
