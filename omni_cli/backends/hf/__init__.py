"""The hf backend: a local Qwen2.5-Omni checkpoint through transformers' modules, stepped by our loops."""

from __future__ import annotations

from typing import Any

from omni_cli.backends.base import BackendUnavailable
from omni_cli.backends.hf.params import HFParams, check_settings

INSTALL_HINT = 'the hf backend needs the hf extra: pip install "omni_cli[hf]"'

__all__ = ["HFParams", "INSTALL_HINT", "build", "check_settings"]


def build(card: Any, settings: dict[str, Any]) -> dict[str, Any]:
    """The thinker, talker and vocoder components of one checkpoint, sharing its modules.

    `settings` are the card's params (see HFParams; `model_path` is required). `card` is not read:
    everything this backend needs is in `settings`.
    """
    params = HFParams.from_settings(dict(settings))
    try:
        # torch and transformers are imported only here, so the package imports without the extra
        import torch  # noqa: F401
        from transformers import Qwen2_5OmniForConditionalGeneration  # noqa: F401
    except ImportError as exc:
        raise BackendUnavailable(INSTALL_HINT) from exc
    from omni_cli.backends.hf.loading import load_checkpoint
    from omni_cli.backends.hf.talker import HFTalker
    from omni_cli.backends.hf.thinker import HFThinker
    from omni_cli.backends.hf.token2wav import HFVocoder

    loaded = load_checkpoint(params)
    return {
        "thinker": HFThinker(loaded, params),
        "talker": HFTalker(loaded, params),
        "vocoder": HFVocoder(loaded, params),
    }
