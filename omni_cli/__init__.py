"""omni_cli: a step-level runtime for omni speech models (thinker → talker → vocoder)."""

__version__ = "0.1.0"

_FRONT = ("EngineOptions", "Speech", "SpeechFailed", "Voice", "build_engine", "load_voice")


def __getattr__(name: str):
    """The front page (`omni_cli.load_voice`, …) from omni_cli.api, imported on first use: `omni --help`
    and the package's other modules do not pay for the engine's imports."""
    if name in _FRONT:
        from . import api

        return getattr(api, name)
    raise AttributeError(f"module 'omni_cli' has no attribute {name!r}")
