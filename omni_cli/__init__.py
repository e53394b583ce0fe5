"""omni_cli: a step-level runtime for omni speech models (thinker → talker → vocoder)."""

__version__ = "0.1.0"
