"""What transformers' Omni `generate` does to logits, which our loops' Sampler reproduces (no torch)."""

# `Qwen2_5OmniForConditionalGeneration.generate` (5.24) runs:
# - thinker: the thinker's generation config, which for Qwen2.5-Omni checkpoints has no processors:
#   greedy argmax unless `thinker_do_sample=True` is passed.
# - talker: repetition penalty 1.05 over the talker's whole id sequence (prefill codec ids included),
#   then codec BOS suppressed (-inf); with `talker_do_sample=True` (its default) then temperature 0.9,
#   top-k 40, top-p 0.8 and a multinomial draw. With `talker_do_sample=False` the penalty and the
#   suppression still apply before the argmax. `omni_cli.loops.sampling.Sampler` applies the same
#   float32 penalty and masks suppressed ids (tests/hf/test_hf_backend.py checks it against transformers).

from __future__ import annotations

# generate's defaults, per stage; `do_sample=False` keeps only the processors above the sampling line
THINKER_GENERATE_DEFAULTS = {"do_sample": False, "repetition_penalty": 1.0}
TALKER_GENERATE_DEFAULTS = {
    "do_sample": True,
    "repetition_penalty": 1.05,
    "temperature": 0.9,
    "top_k": 40,
    "top_p": 0.8,
}
