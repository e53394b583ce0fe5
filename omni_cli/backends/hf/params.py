"""The hf backend's card parameters: per-component params and the backend settings (no torch import)."""

from __future__ import annotations

from dataclasses import MISSING, dataclass, field, fields
from typing import Any

from ...spec.schema import bounded

# Qwen2.5-Omni only produces speech when the system prompt is exactly this one (model card).
QWEN_OMNI_SYSTEM_PROMPT = (
    "You are Qwen, a virtual human developed by the Qwen Team, Alibaba Group, capable of perceiving "
    "auditory and visual inputs, as well as generating text and speech."
)


@dataclass
class ThinkerParams:
    system_prompt: str = bounded(QWEN_OMNI_SYSTEM_PROMPT, doc="system prompt of chat and echo prompts")
    echo_instruction: str = bounded("Repeat exactly: ", doc="user-turn prefix of echo prompts")


@dataclass
class TalkerParams:
    max_new_tokens: int = bounded(4096, min=1, max=65536, doc="most codec tokens per utterance, EOS included")


@dataclass
class VocoderParams:
    dit_num_steps: int = bounded(10, min=2, max=1000, doc="time points of the flow-matching ODE")
    dit_guidance_scale: float = bounded(0.5, min=0.0, max=100.0, doc="classifier-free guidance of the DiT")
    dit_sway_coefficient: float = bounded(-1.0, min=-10.0, max=10.0, doc="sway sampling of the ODE time points")
    chunk_past_frames: int = bounded(48, min=0, max=4096, doc="mel frames of left context per DiT window")
    chunk_future_frames: int = bounded(24, min=0, max=4096, doc="mel frames of right context per DiT window")
    bigvgan_overlap_frames: int = bounded(
        40, min=0, max=4096, doc="mel frames BigVGAN re-reads from the previous chunk; half trimmed on each inner edge"
    )
    noise_seed: int = bounded(0, min=0, max=2**63 - 1, doc="seed of the DiT noise when the request gives none")

    def problems(self) -> list[tuple[str, str]]:
        out = []
        if self.bigvgan_overlap_frames % 2:
            out.append(("bigvgan_overlap_frames", "must be even (half of it is trimmed on each side)"))
        if self.chunk_future_frames % 2:
            out.append(("chunk_future_frames", "must be even (2 mel frames per code)"))
        return out


PARAMS = {"thinker": ThinkerParams, "talker": TalkerParams, "vocoder": VocoderParams}


def _setting(
    default: Any = MISSING, *, doc: str, choices: tuple = (), min: int | None = None, max: int | None = None
) -> Any:
    return field(default=default, metadata={"doc": doc, "choices": choices, "min": min, "max": max})


@dataclass(frozen=True)
class HFParams:
    """Backend settings: the card's top-level `params`, overridable from the CLI (--model-path ...)."""

    model_path: str = _setting(doc="local Qwen2.5-Omni checkpoint directory (Hugging Face format + spk_dict.pt)")
    dtype: str = _setting(
        "float32",
        doc="thinker/talker dtype (token2wav always runs in float32)",
        choices=("float32", "bfloat16", "float16"),
    )
    device: str = _setting("cpu", doc="torch device: cpu, cuda or cuda:N")
    attn_implementation: str = _setting("sdpa", doc="transformers attention kernel", choices=("sdpa", "eager"))
    match_hf_generate_5_24: bool = _setting(
        False, doc="skip the codec BOS/PAD embeddings in the talker prefill, as transformers 5.24 generate does"
    )
    num_threads: int = _setting(
        0, doc="torch intra-op CPU threads for this process; 0 leaves torch's choice", min=0, max=4096
    )

    @classmethod
    def from_settings(cls, settings: dict[str, Any]) -> HFParams:
        """Validate `settings` strictly; every problem is reported in one ValueError."""
        errors = check_settings(settings)
        if errors:
            raise ValueError("; ".join(errors))
        return cls(**settings)


def check_settings(settings: dict[str, Any]) -> list[str]:
    """Every problem of `settings` against HFParams, one line each (empty when valid)."""
    errors: list[str] = []
    known = {f.name: f for f in fields(HFParams)}
    for key in settings:
        if key not in known:
            errors.append(f"unknown setting {key!r} (known: {', '.join(sorted(known))})")
    for name, spec in known.items():
        if name not in settings:
            if spec.default is MISSING:
                errors.append(f"the hf backend needs {name!r}: {spec.metadata['doc']} (--model-path DIR)")
            continue
        value, kind, meta = settings[name], {"str": str, "bool": bool, "int": int}[spec.type], spec.metadata
        # a YAML `true` is an int to Python; it must not pass as a number (nor 1 as a bool)
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            errors.append(f"setting {name!r} must be {spec.type}, got {type(value).__name__} {value!r}")
        elif meta["choices"] and value not in meta["choices"]:
            errors.append(f"setting {name!r} must be one of {', '.join(meta['choices'])}, got {value!r}")
        elif meta["max"] is not None and not meta["min"] <= value <= meta["max"]:
            errors.append(f"setting {name!r} must be in [{meta['min']}, {meta['max']}], got {value!r}")
    return errors
