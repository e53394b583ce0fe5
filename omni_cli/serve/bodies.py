"""Request bodies, checked strictly: JSON object, known fields, right types, values in range.

Each check names the field (`param`) in OpenAI's error shape. Nothing here reads the engine: a
body is turned into a SpeakRequest plus how to answer, or an ApiError 400.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..spec import SpeakRequest
from .errors import ApiError, bad_request

SPEECH_FORMATS = ("wav", "pcm", "flac", "mp3", "opus", "aac")
STREAMABLE = ("wav", "pcm", "flac", "mp3", "opus")  # formats whose bytes can go out chunk by chunk
MAX_SEED = 2**32 - 1


@dataclass(frozen=True)
class ModelInfo:
    """What the bodies are checked against: the served card's names, voices and limits."""

    names: tuple[str, ...]  # what `model` may say: the card name given to --card, and the card's model id
    voices: tuple[str, ...]
    default_voice: str | None
    max_text_chars: int
    max_tokens: int  # the thinker's cap
    sample_rate: int
    capabilities: tuple[str, ...]


@dataclass(frozen=True)
class SpeechBody:
    request: SpeakRequest
    response_format: str | None  # None: the server's default
    stream: str | None  # None (whole file), "sse" or "audio"


def parse_json(raw: bytes) -> dict[str, Any]:
    try:
        body = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise bad_request("the request body is not UTF-8", code="invalid_json") from None
    except json.JSONDecodeError as exc:
        raise bad_request(f"the request body is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}",
                          code="invalid_json") from None
    if not isinstance(body, dict):
        raise bad_request(f"the request body must be a JSON object, not {_json_type(body)}", code="invalid_json")
    return body


def _json_type(value: Any) -> str:
    return {bool: "a boolean", int: "a number", float: "a number", str: "a string", list: "an array",
            dict: "an object", type(None): "null"}.get(type(value), type(value).__name__)


def check_fields(body: dict[str, Any], allowed: set[str], where: str = "") -> None:
    unknown = sorted(set(body) - allowed)
    if unknown:
        name = where + unknown[0]
        raise bad_request(f"unknown field {name!r} (known: {', '.join(sorted(allowed))})", name, "unknown_parameter")


def get(body: dict[str, Any], key: str, kind: type | tuple[type, ...], default: Any = None, *, where: str = "",
        required: bool = False) -> Any:
    """`body[key]`, checked to be of `kind` (bool is never a number); `default` when absent or null."""
    name = where + key
    if key not in body or body[key] is None:
        if required:
            raise bad_request(f"missing required field {name!r}", name, "missing_required_parameter")
        return default
    value = body[key]
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if isinstance(value, bool) and bool not in kinds or not isinstance(value, kinds):
        want = " or ".join(_json_type(k()) if k is not type(None) else "null" for k in kinds)
        raise bad_request(f"{name!r} must be {want}, not {_json_type(value)}", name, "invalid_type")
    return value


def check_model(info: ModelInfo, model: str) -> None:
    if model not in info.names:
        raise ApiError(404, f"the model {model!r} does not exist on this server (served: {', '.join(info.names)})",
                       param="model", code="model_not_found")


def check_voice(info: ModelInfo, voice: Any, name: str = "voice") -> str | None:
    if isinstance(voice, dict):  # OpenAI's newer shape: {"id": "..."}
        check_fields(voice, {"id"}, name + ".")
        voice = get(voice, "id", str, where=name + ".", required=True)
    if voice is None:
        return None
    if not isinstance(voice, str):
        raise bad_request(f"{name!r} must be a string, not {_json_type(voice)}", name, "invalid_type")
    if voice not in info.voices:
        raise bad_request(f"unknown voice {voice!r} (this model's voices: {', '.join(info.voices) or 'none'})",
                          name, "unknown_voice")
    return voice


def check_common(info: ModelInfo, body: dict[str, Any], text: str) -> dict[str, Any]:
    """seed, max_tokens and the text's length: the SpeakRequest fields every endpoint shares."""
    seed = get(body, "seed", int, 0)
    if not 0 <= seed <= MAX_SEED:
        raise bad_request(f"'seed' must be between 0 and {MAX_SEED}, got {seed}", "seed")
    max_tokens = get(body, "max_tokens", int)
    if max_tokens is not None and not 1 <= max_tokens <= info.max_tokens:
        raise bad_request(f"'max_tokens' must be between 1 and {info.max_tokens} (the card's cap), got {max_tokens}",
                          "max_tokens")
    if not text.strip():
        raise bad_request("the input text is empty (nothing to speak)", "input", "empty_input")
    if len(text) > info.max_text_chars:
        raise bad_request(f"the input is {len(text)} characters, over this model's limit of {info.max_text_chars}; "
                          "split it into several requests", "input", "input_too_long")
    return {"seed": seed, "max_tokens": max_tokens}


def speech_body(info: ModelInfo, raw: bytes) -> SpeechBody:
    """POST /v1/audio/speech: OpenAI's fields plus our `seed`, `mode`, `max_tokens`, `stream`."""
    body = parse_json(raw)
    check_fields(body, {"model", "input", "voice", "response_format", "speed", "instructions", "stream_format",
                        "stream", "seed", "mode", "max_tokens"})
    check_model(info, get(body, "model", str, required=True))
    text = get(body, "input", str, required=True)
    voice = check_voice(info, body.get("voice"))
    fmt = get(body, "response_format", str)  # None: the server's default (mp3, as OpenAI's, where it can)
    if fmt is not None and fmt not in SPEECH_FORMATS:
        raise bad_request(f"unknown response_format {fmt!r} (supported: wav, pcm, flac, mp3, opus)", "response_format")
    speed = get(body, "speed", (int, float), 1.0)
    if speed != 1.0:
        raise bad_request(f"speed {speed} is not supported: this server only speaks at speed 1.0 "
                          "(changing the rate would change the audio the model made)", "speed", "unsupported_value")
    if get(body, "instructions", str, ""):
        raise bad_request("'instructions' is not supported by this model (its card has no instruction-following "
                          "voice); leave it out", "instructions", "unsupported_parameter")
    stream_format = get(body, "stream_format", str)
    if stream_format not in (None, "sse", "audio"):
        raise bad_request(f"unknown stream_format {stream_format!r} (supported: sse, audio)", "stream_format")
    stream = "sse" if get(body, "stream", bool, False) else stream_format
    if stream is not None and fmt is not None and fmt not in STREAMABLE:
        raise bad_request(f"response_format {fmt!r} cannot be streamed; stream {', '.join(STREAMABLE)}, or leave out "
                          "stream/stream_format for the whole file", "response_format", "unsupported_value")
    mode = get(body, "mode", str)
    if mode not in (None, "echo", "chat"):
        raise bad_request(f"unknown mode {mode!r} (echo: speak the input; chat: speak a reply to it)", "mode")
    common = check_common(info, body, text)
    return SpeechBody(SpeakRequest(text, mode=mode, voice=voice, **common), fmt, stream)
