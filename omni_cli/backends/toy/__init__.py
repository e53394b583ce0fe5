"""The embedded numpy backend: tiny genuine nets with weights drawn from the card's seed."""

from __future__ import annotations

from typing import Any

from ...spec.card import CardSpec
from .eyes import NumpyImageEncoder
from .listener import NumpyAudioEncoder
from .params import PARAMS, TalkerParams, ThinkerParams, VocoderParams
from .talker import NumpyTalker
from .thinker import NumpyThinker
from .vocoder import NumpyVocoder

__all__ = ["PARAMS", "build"]


def build(card: CardSpec, params: dict[str, Any], settings: Any = None, on_load: Any = None,
          only: str | None = None) -> dict[str, Any]:
    """Components by name. `params[name]` is that component's validated params dataclass (built at once: no
    phases to report to `on_load`; a worker's `only` component gets them all too, they cost next to nothing)."""
    by_role = {spec.role: name for name, spec in card.components.items()}
    thinker_name, talker_name, vocoder_name = by_role["thinker"], by_role["talker"], by_role["vocoder"]
    thinker_params: ThinkerParams = params[thinker_name]
    talker_params: TalkerParams = params[talker_name]
    vocoder_params: VocoderParams = params[vocoder_name]
    thinker = NumpyThinker(thinker_name, thinker_params, card.seed)
    talker = NumpyTalker(talker_name, talker_params, card.seed, thinker, card.voices)
    vocoder = NumpyVocoder(vocoder_name, vocoder_params, card.seed, talker_params.codebook_size, card.sample_rate,
                           card.voices)
    built = {thinker_name: thinker, talker_name: talker, vocoder_name: vocoder}
    if "audio_encoder" in by_role:  # a card that listens
        name = by_role["audio_encoder"]
        built[name] = NumpyAudioEncoder(name, params[name], card.seed, thinker_params.d_model)
    if "image_encoder" in by_role:  # a card that sees
        name = by_role["image_encoder"]
        built[name] = NumpyImageEncoder(name, params[name], card.seed, thinker_params.d_model)
    return built
