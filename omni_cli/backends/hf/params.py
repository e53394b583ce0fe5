"""The hf backend's card parameters: names, types, bounds and defaults (no torch import)."""

from __future__ import annotations

from dataclasses import MISSING, dataclass, field, fields
from typing import Any

# Qwen2.5-Omni only produces speech when the system prompt is exactly this one (model card).
QWEN_OMNI_SYSTEM_PROMPT = (
    "You are Qwen, a virtual human developed by the Qwen Team, Alibaba Group, capable of perceiving "
    "auditory and visual inputs, as well as generating text and speech."
)


def _param(default: Any = MISSING, *, help: str, choices: tuple = (), min: float | None = None,
           max: float | None = None) -> Any:
    meta = {"help": help, "choices": choices, "min": min, "max": max}
    return field(default=default, metadata=meta)


@dataclass(frozen=True)
class HFParams:
    """Model settings of the hf backend; keys match the card's `params` exactly."""

    model_path: str = _param(help="local Qwen2.5-Omni checkpoint directory (Hugging Face format + spk_dict.pt)")
    dtype: str = _param("float32", help="thinker/talker weight dtype (token2wav always runs in float32)",
                        choices=("float32", "bfloat16", "float16"))
    device: str = _param("cpu", help="torch device: cpu, cuda or cuda:N")
    attn_implementation: str = _param("sdpa", help="transformers attention kernel", choices=("sdpa", "eager"))
    match_hf_generate_5_24: bool = _param(
        False, help="skip the codec BOS/PAD embeddings in the talker prefill, as transformers 5.24 generate does")
    system_prompt: str = _param(QWEN_OMNI_SYSTEM_PROMPT, help="system prompt of chat and echo prompts")
    echo_instruction: str = _param("Repeat exactly: ", help="user-turn prefix of echo prompts")
    default_voice: str = _param("Chelsie", help="voice when the request names none")
    talker_max_new_tokens: int = _param(4096, help="most codec tokens per utterance", min=1, max=1_000_000)
    dit_num_steps: int = _param(10, help="time points of the flow-matching ODE", min=2, max=1000)
    dit_guidance_scale: float = _param(0.5, help="classifier-free guidance of the DiT", min=0.0, max=100.0)
    dit_sway_coefficient: float = _param(-1.0, help="sway sampling of the ODE time points", min=-10.0, max=10.0)
    vocoder_chunked: bool = _param(True, help="streaming token2wav; false: one whole-utterance chunk")
    chunk_past_frames: int = _param(48, help="mel frames of left context per DiT window", min=0, max=4096)
    chunk_future_frames: int = _param(24, help="mel frames of right context per DiT window", min=0, max=4096)
    bigvgan_overlap_frames: int = _param(40, help="mel frames BigVGAN re-reads from the previous chunk; half "
                                             "of them are trimmed on each inner edge", min=0, max=4096)
    noise_seed: int = _param(0, help="seed of the DiT noise when the request gives none", min=0, max=2**63 - 1)

    @classmethod
    def from_settings(cls, settings: dict[str, Any]) -> HFParams:
        """Validate `settings` strictly; every problem is reported in one ValueError."""
        errors = check_settings(settings)
        if errors:
            raise ValueError("invalid hf backend settings:\n  " + "\n  ".join(errors))
        return cls(**settings)


def check_settings(settings: dict[str, Any]) -> list[str]:
    """Every problem of `settings` against HFParams, one line each (empty when valid)."""
    errors: list[str] = []
    known = {f.name: f for f in fields(HFParams)}
    for key in settings:
        if key not in known:
            errors.append(f"unknown key {key!r} (known: {', '.join(sorted(known))})")
    for name, spec in known.items():
        if name not in settings:
            if spec.default is MISSING:
                errors.append(f"missing required key {name!r}: {spec.metadata['help']}")
            continue
        errors.extend(_check_value(name, spec, settings[name]))
    if settings.get("bigvgan_overlap_frames", 40) % 2:
        errors.append("'bigvgan_overlap_frames' must be even (half is trimmed on each side)")
    return errors


def _check_value(name: str, spec: Any, value: Any) -> list[str]:
    kind = {"str": str, "int": int, "float": float, "bool": bool}[spec.type]
    # bool is an int in Python; a YAML `true` must not pass as a number (and 1 not as a bool)
    ok = isinstance(value, kind) and (kind is bool or not isinstance(value, bool))
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        ok = True
    if not ok:
        return [f"{name!r} must be {spec.type}, got {type(value).__name__} {value!r}"]
    meta = spec.metadata
    if meta["choices"] and value not in meta["choices"]:
        return [f"{name!r} must be one of {', '.join(meta['choices'])}, got {value!r}"]
    if meta["min"] is not None and value < meta["min"]:
        return [f"{name!r} must be >= {meta['min']}, got {value!r}"]
    if meta["max"] is not None and value > meta["max"]:
        return [f"{name!r} must be <= {meta['max']}, got {value!r}"]
    return []
