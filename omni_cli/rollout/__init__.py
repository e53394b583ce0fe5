"""The rollout profile: samples with their per-WorkUnit behaviour on disk, and re-scoring them exactly."""

from .prompts import Prompt, parse_prompts
from .records import Sample, behaviour, load_run, load_sample, save_sample
from .run import MANIFEST, SampleInfo, rollout, sample_meta
from .scoring import Agreement, compare, replay_request, score

__all__ = [
    "MANIFEST", "Agreement", "Prompt", "Sample", "SampleInfo", "behaviour", "compare", "load_run", "load_sample",
    "parse_prompts", "replay_request", "rollout", "sample_meta", "save_sample", "score",
]
