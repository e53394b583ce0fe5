"""The request-level reference: Hugging Face `generate` on the same checkpoint, one request at a time."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..base import LoadReporter, no_report


@dataclass
class ReferenceRun:
    thinker_tokens: list[int]
    talker_tokens: list[int]  # codec ids after the prefill, EOS included when it came
    samples: np.ndarray  # float32 waveform at 24 kHz
    latency_s: float  # the whole call: with generate the first audio comes at the end


class GenerateReference:
    """`Qwen2_5OmniForConditionalGeneration.generate`, greedy talker, timed per request."""

    def __init__(self, model_path: str, talker_eos_ids: list[int], model: object | None = None,
                 num_threads: int | None = None):
        """`model`: an already loaded Qwen2_5OmniForConditionalGeneration to share (our components' own,
        `HFThinker.model`: generate passes positions the same way and keeps no state between calls that
        our steps read), instead of a second copy of the weights. `num_threads`: torch's intra-op threads
        for each call (None: as the caller left them), to compare with our components on equal terms."""
        if model is None:
            from transformers import Qwen2_5OmniForConditionalGeneration

            model = Qwen2_5OmniForConditionalGeneration.from_pretrained(model_path).eval()
        self.model = model
        self.talker_eos_ids = talker_eos_ids
        self.num_threads = num_threads

    def run(self, input_ids: list[int], *, voice: str, seed: int, thinker_max: int, talker_max: int,
            talker_min: int = 0, forced: list[int] | None = None) -> ReferenceRun:
        """`forced`: the thinker reply to force, EOS included (echo mode), one token per step."""
        import torch

        from .threads import intra_op_threads

        if self.model.config.model_type == "qwen3_omni_moe":  # a Qwen3-Omni checkpoint: qwen3_reference.py
            from .qwen3_reference import generate_reference

            if forced is not None:
                raise ValueError("the Qwen3-Omni reference runs chat mode only (no forced reply)")
            with intra_op_threads(self.num_threads or torch.get_num_threads()):
                return generate_reference(self.model, input_ids, voice=voice, thinker_max=thinker_max,
                                          talker_max=talker_max, talker_min=talker_min,
                                          thinker_eos=self.model.thinker.generation_config.eos_token_id)

        extra = {} if forced is None else {"thinker_logits_processor": _forcing(forced, len(input_ids))}
        flags = logging.getLogger("transformers.generation.configuration_utils")
        flags.addFilter(_greedy_talker_flags)
        try:
            torch.manual_seed(seed)  # token2wav draws its noise from the global generator
            start = time.perf_counter()
            with torch.no_grad(), intra_op_threads(self.num_threads or torch.get_num_threads()), \
                    talker_outputs(self.model) as talker_runs:
                sequences, wave = self.model.generate(
                    torch.tensor([input_ids], device=self.model.device), speaker=voice, thinker_max_new_tokens=thinker_max,
                    talker_max_new_tokens=talker_max, talker_min_new_tokens=talker_min, talker_do_sample=False,
                    talker_eos_token_id=self.talker_eos_ids, **extra)
            latency = time.perf_counter() - start
        finally:
            flags.removeFilter(_greedy_talker_flags)
        talker = talker_runs[-1][0, len(input_ids) + 2:].tolist()
        samples = wave.reshape(-1).float().cpu().numpy()
        return ReferenceRun(sequences[0, len(input_ids):].tolist(), talker, samples, latency)


@contextmanager
def talker_outputs(model: Any) -> Iterator[list]:
    """Inside it, what each call of `model.talker.generate` returns is kept, in order: `model.generate` returns
    no talker ids (nor Qwen3-Omni's frames), which parity checks and the tiny builders read."""
    kept: list = []
    generate = model.talker.generate

    def spy(*args, **kwargs):
        kept.append(generate(*args, **kwargs))
        return kept[-1]

    model.talker.generate = spy
    try:
        yield kept
    finally:
        del model.talker.generate  # the class's method again


class _GreedyTalkerFlags(logging.Filter):
    """generate(talker_do_sample=False) still hands the talker its default temperature, top_k and top_p, and
    transformers warns that they "may be ignored": greedy decoding ignores them, as this reference means it
    to. That one warning is dropped; any other still shows."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "generation flags are not valid and may be ignored" not in record.getMessage()


_greedy_talker_flags = _GreedyTalkerFlags()


def load_reference(model_path: str, dtype: object = None, device: object = "cpu", on_load: LoadReporter = no_report):
    """What a `generate` user loads before the first call: the model (in `dtype`, a torch dtype: None for
    the checkpoint's own) in eval mode on `device`, and the tokenizer to make its input ids; from_pretrained
    reads `spk_dict.pt` itself. `on_load` hears each weight tensor, as our own load's reporter does
    (`omni bench --reference` counts them: a load that read no weights shows). Returns (model, tokenizer)."""
    from transformers import AutoTokenizer, Qwen2_5OmniForConditionalGeneration, Qwen3OmniMoeForConditionalGeneration

    from .loading import counted_weights, quiet_transformers
    from .qwen3_build import is_qwen3_omni

    cls = Qwen3OmniMoeForConditionalGeneration if is_qwen3_omni(model_path) else Qwen2_5OmniForConditionalGeneration
    with quiet_transformers(), counted_weights(on_load):
        model = cls.from_pretrained(model_path, dtype=dtype or "auto")
    with quiet_transformers():
        tokenizer = AutoTokenizer.from_pretrained(model_path)
    return model.to(device).eval(), tokenizer


def _forcing(forced: list[int], prompt_len: int):
    """A logits processor that leaves only the next forced token possible (echo mode's thinker)."""
    import torch
    from transformers import LogitsProcessor, LogitsProcessorList

    class Force(LogitsProcessor):
        def __call__(self, ids, scores):
            keep = torch.full_like(scores, -float("inf"))
            keep[:, forced[ids.shape[1] - prompt_len]] = 0.0
            return keep

    return LogitsProcessorList([Force()])
