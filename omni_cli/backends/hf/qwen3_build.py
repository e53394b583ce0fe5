"""The hf backend's Qwen3-Omni components: MoE thinker, talker with its code predictor, streamed Code2Wav."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..base import LoadReporter

MODEL_TYPE = "qwen3_omni_moe"  # config.json's model_type of a Qwen3-Omni checkpoint


def checkpoint_model_type(model_path: str) -> str | None:
    """The checkpoint directory's config.json model_type (read without importing torch); None: no readable one."""
    try:
        config = json.loads((Path(model_path).expanduser() / "config.json").read_text())
    except (OSError, ValueError):
        return None
    found = config.get("model_type") if isinstance(config, dict) else None
    return found if isinstance(found, str) else None


def is_qwen3_omni(model_path: str) -> bool:
    """Whether the checkpoint directory's config.json names Qwen3-Omni (read without importing torch)."""
    return checkpoint_model_type(model_path) == MODEL_TYPE


def build_qwen3(settings: Any, names: dict[str, str], role_params: Callable[[str], Any], threads: Callable[[str], Any],
                on_load: LoadReporter) -> dict[str, Any]:
    """The three components of one Qwen3-Omni checkpoint, sharing its modules, by component name. The thinker is
    Qwen2.5-Omni's stepping (thinker.py) over the MoE thinker: the same calls, the same ChatML prompts."""
    from .qwen3_loading import load_qwen3
    from .qwen3_talker import Qwen3Talker
    from .qwen3_vocoder import Qwen3Vocoder
    from .thinker import HFThinker

    loaded = load_qwen3(settings, on_load)
    thinker = HFThinker(loaded, role_params("thinker"), names["thinker"], threads("thinker"))
    config = loaded.model.config
    thinker.hidden_layer = int(config.talker_config.accept_hidden_layer)  # what the talker reads at heard positions
    heard = config.thinker_config  # the chat template's audio tokens, by the ids the thinker config names
    thinker.prompts.audio_tokens = tuple(loaded.tokenizer.convert_ids_to_tokens(
        [heard.audio_start_token_id, heard.audio_token_id, heard.audio_end_token_id]))
    talker = Qwen3Talker(loaded, role_params("talker"), names["talker"], threads("talker"))
    vocoder = Qwen3Vocoder(loaded, role_params("vocoder"), names["vocoder"], threads("vocoder"))
    built = {thinker.name: thinker, talker.name: talker, vocoder.name: vocoder}
    if "audio_encoder" in names:  # a card that listens: the thinker's audio tower, on the checkpoint's features
        from . import audio_encoder
        from .qwen3_listener import Qwen3AudioEncoder

        built[names["audio_encoder"]] = audio_encoder(Qwen3AudioEncoder, loaded, settings.model_path,
                                                      names["audio_encoder"], threads)
    return built
