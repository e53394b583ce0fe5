"""The model options of a command, and the engine the library's builder makes from them."""

from __future__ import annotations

from ..build import EngineOptions, SettingsError, build_engine
from .errors import CliError

ModelOptions = EngineOptions  # card, program, policy, settings, --placement, --ray-address, --replicas, --set
BACKEND_SETTINGS = {"model_path": "--model-path", "dtype": "--dtype", "device": "--device"}


def open_engine(options: ModelOptions, on_load=None):
    """`build_engine`, its errors in the command line's words. Raises SpecError / CliError for bad input.

    `on_load` (a load_view.LoadView) hears the backend's load phases."""
    try:
        return build_engine(options, on_load)
    except SettingsError as exc:
        message = str(exc).split(": ", 1)[1]
        raise CliError(f"{', '.join(BACKEND_SETTINGS[k] for k in exc.keys)}: {message}") from None


def check_voice(engine, voice: str | None) -> None:
    """Fail before any output is opened, not at the first request."""
    from ..spec import SpecError

    try:
        engine.program.resolve_voice(voice)  # the same check every request meets in the engine
    except SpecError as exc:
        raise CliError(f"--voice: {exc.issues[0].message}") from None
