"""The hf backend: a local Qwen2.5-Omni or Qwen3-Omni checkpoint through transformers' modules, stepped by our loops."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...extras import install_command
from ...spec import SpecError, SpecIssue
from ..base import BackendUnavailable, LoadReporter, LoadStep, no_report
from .params import PARAMS, SETTINGS, HFParams

INSTALL_HINT = "the hf backend needs the hf extra: " + install_command("hf")

__all__ = ["INSTALL_HINT", "PARAMS", "SETTINGS", "HFParams", "build"]


CHECKPOINT_FILES = ("config.json", "spk_dict.pt")  # what every Qwen2.5-Omni checkpoint directory holds


def missing_checkpoint_file(model_path: str) -> str | None:
    """Why `model_path` is not a checkpoint directory, or None when it looks like one."""
    from .qwen3_build import is_qwen3_omni

    path = Path(model_path).expanduser()
    if not path.is_dir():
        return f"{path}: no such checkpoint directory"
    if is_qwen3_omni(model_path):  # Qwen3-Omni's voices are in its config.json
        return None
    for needed in CHECKPOINT_FILES:
        if not (path / needed).is_file():
            return f"{path} is not a Qwen2.5-Omni checkpoint directory: {needed} is missing"
    return None


def build(card: Any, params: dict[str, Any] | None = None, settings: HFParams | dict[str, Any] | None = None,
          on_load: LoadReporter = no_report, only: str | None = None) -> dict[str, Any]:
    """The thinker, talker and vocoder of one checkpoint, sharing its modules, by component name.

    `params[name]` is that component's params (a PARAMS dataclass, a plain dict, or absent for the
    defaults); `settings` are the backend settings (HFParams: `model_path` is required). `card` may be
    None (tests): the components are then named after their roles. `on_load` hears each phase of the
    seconds a first load takes (importing torch, the weights tensor by tensor, the voices).
    `only`: the one component a worker runs (executors/worker.py). For the vocoder that is token2wav's
    weights and the voices alone (`load_token2wav`); a thinker or talker still gets the whole checkpoint,
    with every component (the talker's hand-off reads the thinker's weights).
    """
    config = settings if isinstance(settings, HFParams) else HFParams.from_settings(dict(settings or {}))
    if not config.model_path:
        raise SpecError([SpecIssue(getattr(card, "source", "<hf settings>"), None, "model_path",
                                   "the hf backend needs a checkpoint directory: pass --model-path DIR")])
    missing = missing_checkpoint_file(config.model_path)
    if missing:  # bad input (exit 2), said before torch is imported
        raise SpecError([SpecIssue("--model-path", None, "", missing)])
    on_load(LoadStep("importing torch and transformers"))
    try:
        # torch and transformers are imported only here, so the package imports without the extra
        import torch  # noqa: F401
        from transformers import Qwen2_5OmniForConditionalGeneration  # noqa: F401
    except ImportError as exc:
        raise BackendUnavailable(INSTALL_HINT) from exc
    from .threads import choose_threads

    names = {"thinker": "thinker", "talker": "talker", "vocoder": "vocoder"}
    if card is not None:
        names = {spec.role: name for name, spec in card.components.items()}
    given = params or {}

    def role_params(role: str) -> Any:
        value = given.get(names[role])
        if value is None:
            return PARAMS[role]()
        return PARAMS[role](**value) if isinstance(value, dict) else value

    def threads(role: str) -> Any:  # the component's own num_threads, else the card's (threads.py)
        return choose_threads(role_params(role).num_threads, config.num_threads)

    from .qwen3_build import build_qwen3, is_qwen3_omni

    if is_qwen3_omni(config.model_path):  # the checkpoint's config.json says which model it is
        return build_qwen3(config, names, role_params, threads, on_load)
    return _build_qwen2_5(config, names, role_params, threads, on_load, only)


def _build_qwen2_5(config: HFParams, names: dict[str, str], role_params: Any, threads: Any, on_load: LoadReporter,
                   only: str | None) -> dict[str, Any]:
    """Qwen2.5-Omni's components by name: thinker, talker, token2wav, and the audio and vision towers where the
    card listens and sees."""
    from .loading import load_checkpoint, load_token2wav
    from .talker import HFTalker
    from .thinker import HFThinker
    from .token2wav import HFVocoder

    if only is not None and only == names["vocoder"]:
        return {only: HFVocoder(load_token2wav(config, on_load), role_params("vocoder"), only, threads("vocoder"), on_load)}
    loaded = load_checkpoint(config, on_load)
    thinker = HFThinker(loaded, role_params("thinker"), names["thinker"], threads("thinker"))
    talker = HFTalker(loaded, role_params("talker"), config, names["talker"], threads("talker"))
    vocoder = HFVocoder(loaded, role_params("vocoder"), names["vocoder"], threads("vocoder"), on_load)
    built = {thinker.name: thinker, talker.name: talker, vocoder.name: vocoder}
    if "audio_encoder" in names:  # a card that listens: the thinker's audio tower, on the checkpoint's features
        from .listener import HFAudioEncoder, ListenerUnavailable

        try:
            encoder = HFAudioEncoder(loaded, config.model_path, names["audio_encoder"], threads("audio_encoder"))
        except ListenerUnavailable as exc:
            raise SpecError([SpecIssue("--model-path", None, "", str(exc))]) from None
        built[encoder.name] = encoder
    if "image_encoder" in names:  # a card that sees: the thinker's vision tower, on the checkpoint's processor
        from .eyes import HFImageEncoder
        from .listener import ListenerUnavailable
        from .tokenizer import IMAGE_TOKENS
        try:
            eyes = HFImageEncoder(loaded, config.model_path, names["image_encoder"], threads("image_encoder"))
            thinker.prompts.require(IMAGE_TOKENS, "see")
        except (ListenerUnavailable, ValueError) as exc:
            raise SpecError([SpecIssue("--model-path", None, "", str(exc))]) from None
        built[eyes.name] = eyes
    return built
