"""The request-level reference for Qwen3-Omni: `Qwen3OmniMoeForConditionalGeneration.generate`, greedy talker."""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass

import numpy as np


@dataclass
class Qwen3ReferenceRun:
    thinker_tokens: list[int]  # the reply, EOS included when it came
    frames: list[tuple[int, ...]]  # every codebook group's code of each vocoded frame
    talker_tokens: list[int]  # group 0 of every frame the talker made, codec EOS included when it came
    samples: np.ndarray  # float32 waveform at 24 kHz
    latency_s: float  # the whole call: with generate the first audio comes at the end


def generate_reference(model, input_ids: list[int], *, voice: str, thinker_max: int, talker_max: int,
                       thinker_eos: int | list[int], talker_min: int = 0, **inputs) -> Qwen3ReferenceRun:
    """One request through generate with its talker greedy (talker_do_sample=False: the code predictor follows);
    the talker's frames are read from what its generate returns, as generate itself reads them. `inputs`: what
    else generate takes (heard audio: input_features, feature_attention_mask)."""
    import logging

    import torch

    from .reference import _greedy_talker_flags, talker_outputs

    flags = logging.getLogger("transformers.generation.configuration_utils")
    flags.addFilter(_greedy_talker_flags)  # generate hands the greedy talker its temperature: a warning, no effect
    try:
        start = time.perf_counter()
        with torch.no_grad(), warnings.catch_warnings(), talker_outputs(model) as talker_runs:
            # generate's note that the talker's repetition penalty skips its prompt (given as embeddings)
            warnings.simplefilter("ignore", UserWarning)
            sequences, wave = model.generate(
                torch.tensor([input_ids], device=model.device), speaker=voice, thinker_max_new_tokens=thinker_max,
                thinker_eos_token_id=thinker_eos, talker_max_new_tokens=talker_max,
                talker_min_new_tokens=talker_min, talker_do_sample=False, **inputs)
        latency = time.perf_counter() - start
    finally:
        flags.removeFilter(_greedy_talker_flags)
    talker = talker_runs[-1]
    frames = [tuple(step[-1][0].tolist()) for step in talker.hidden_states if step[-1] is not None]
    return Qwen3ReferenceRun(sequences[0, len(input_ids):].tolist(), frames, talker.sequences[0].tolist(),
                             wave.reshape(-1).float().cpu().numpy(), latency)
