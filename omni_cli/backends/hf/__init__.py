"""The hf backend: a local Qwen2.5-Omni checkpoint through transformers' modules, stepped by our loops."""

from __future__ import annotations

from typing import Any

from ..base import BackendUnavailable
from .params import PARAMS, HFParams, check_settings

INSTALL_HINT = 'the hf backend needs the hf extra: pip install "omni_cli[hf]"'

__all__ = ["INSTALL_HINT", "PARAMS", "HFParams", "build", "check_settings"]


def build(card: Any, params: dict[str, Any] | None = None, settings: dict[str, Any] | None = None) -> dict[str, Any]:
    """The thinker, talker and vocoder of one checkpoint, sharing its modules, by component name.

    `params[name]` is that component's params (a PARAMS dataclass, a plain dict, or absent for the
    defaults); `settings` are the backend settings (HFParams: `model_path` is required). `card` may be
    None (tests): the components are then named after their roles.
    """
    config = HFParams.from_settings(dict(settings or {}))
    try:
        # torch and transformers are imported only here, so the package imports without the extra
        import torch  # noqa: F401
        from transformers import Qwen2_5OmniForConditionalGeneration  # noqa: F401
    except ImportError as exc:
        raise BackendUnavailable(INSTALL_HINT) from exc
    from .loading import load_checkpoint
    from .talker import HFTalker
    from .thinker import HFThinker
    from .token2wav import HFVocoder

    names = {"thinker": "thinker", "talker": "talker", "vocoder": "vocoder"}
    if card is not None:
        names = {spec.role: name for name, spec in card.components.items()}
    given = params or {}

    def role_params(role: str) -> Any:
        value = given.get(names[role])
        if value is None:
            return PARAMS[role]()
        return PARAMS[role](**value) if isinstance(value, dict) else value

    loaded = load_checkpoint(config)
    thinker = HFThinker(loaded, role_params("thinker"), names["thinker"])
    talker = HFTalker(loaded, role_params("talker"), config, names["talker"])
    vocoder = HFVocoder(loaded, role_params("vocoder"), names["vocoder"])
    return {thinker.name: thinker, talker.name: talker, vocoder.name: vocoder}
