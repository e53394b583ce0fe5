"""Load a Qwen3-Omni checkpoint directory: the model, its tokenizer and the voices its talker config names."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from transformers import AutoTokenizer, Qwen3OmniMoeForConditionalGeneration

from omni_cli.backends.base import BackendUnavailable, LoadReporter, LoadStep, no_report
from omni_cli.backends.hf.loading import counted_weights, quiet_transformers
from omni_cli.backends.hf.params import HFParams

_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


class Qwen3Voices:
    """The talker config's `speaker_id` (lower-case name -> codec id), named as users write them (Chelsie)."""

    def __init__(self, speaker_ids: dict[str, int]):
        if not speaker_ids:
            raise BackendUnavailable("the checkpoint's talker_config.speaker_id names no voice")
        self._ids = {name.lower(): int(i) for name, i in speaker_ids.items()}
        self.default = "chelsie" if "chelsie" in self._ids else sorted(self._ids)[0]

    def names(self) -> list[str]:
        return sorted(name.capitalize() for name in self._ids)

    def codec_id(self, name: str | None) -> int:
        key = self.default if name is None else name.lower()
        if key not in self._ids:
            raise ValueError(f"unknown voice {name!r}; this checkpoint has: {', '.join(self.names())}")
        return self._ids[key]


@dataclass
class Qwen3Loaded:
    """Everything the three components share: one model, one tokenizer, the voices."""

    model: Any  # Qwen3OmniMoeForConditionalGeneration, eval mode
    tokenizer: Any
    voices: Qwen3Voices
    device: torch.device
    dtype: torch.dtype


def load_qwen3(params: HFParams, on_load: LoadReporter = no_report) -> Qwen3Loaded:
    path = Path(params.model_path).expanduser()
    device = torch.device(params.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise BackendUnavailable(f"device {params.device!r} was asked for but torch sees no CUDA device")
    on_load(LoadStep("building the model"))
    with quiet_transformers(), counted_weights(on_load):
        model = Qwen3OmniMoeForConditionalGeneration.from_pretrained(
            str(path), dtype=_DTYPES[params.dtype], attn_implementation=params.attn_implementation)
    if not model.has_talker:
        raise BackendUnavailable(f"{path} has no talker (enable_audio_output is false): it cannot speak")
    on_load(LoadStep("loading the tokenizer"))
    with quiet_transformers():
        tokenizer = AutoTokenizer.from_pretrained(str(path))
    model.to(device).eval()
    voices = Qwen3Voices(dict(model.config.talker_config.speaker_id or {}))
    return Qwen3Loaded(model=model, tokenizer=tokenizer, voices=voices, device=device, dtype=_DTYPES[params.dtype])
