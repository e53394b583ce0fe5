"""Request bodies, checked strictly: JSON object, known fields, right types, values in range.

Each check names the field (`param`) in OpenAI's error shape. Nothing here reads the engine: a
body is turned into a SpeakRequest plus how to answer, or an ApiError 400.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from ..spec import SpeakRequest, SpecError
from .errors import ApiError, bad_request, from_engine

SPEECH_FORMATS = ("wav", "pcm", "flac", "mp3", "opus", "aac")
STREAMABLE = ("wav", "pcm", "flac", "mp3", "opus", "aac")  # formats whose bytes can go out chunk by chunk
MAX_SEED = 2**32 - 1
MIN_SAMPLE_RATE, MAX_SAMPLE_RATE = 8000, 48000  # a request's `sample_rate`: telephone to studio rates
MAX_DEPTH = 16  # the deepest body the API defines is 5 levels (a chat message's content part's object)
MAX_INT_DIGITS = 40  # far past any field's range; int() of thousands of digits raises or takes long
T = TypeVar("T")
log = logging.getLogger("omni.serve")


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
    speed_range: tuple[float, float] | None = None  # a request's speed where the card has speed control
    takes_instructions: bool = False  # the card's thinker takes a request's instructions


@dataclass(frozen=True)
class SpeechBody:
    request: SpeakRequest
    response_format: str | None  # None: the server's default
    stream: str | None  # None (whole file), "sse" or "audio"
    sample_rate: int | None = None  # resampled to this rate (Hz); None: the card's own


def parse_json(raw: bytes) -> dict[str, Any]:
    """The body as a JSON object, parsed with limits: every way its bytes can be wrong is a 400 here."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise bad_request(f"the request body is not UTF-8 (byte {exc.start})", code="invalid_json") from None
    try:
        body = json.loads(text, parse_int=_parse_int, parse_float=_parse_float, parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        raise bad_request(f"the request body is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}",
                          code="invalid_json") from None
    except RecursionError:  # the decoder recurses per level: a body of brackets runs out of stack first
        raise _too_deep() from None
    _check_tree(body)
    if not isinstance(body, dict):
        raise bad_request(f"the request body must be a JSON object, not {_json_type(body)}", code="invalid_json")
    return body


def _parse_int(digits: str) -> int:
    # int() of thousands of digits raises ValueError (Python's int-str limit) and costs quadratic time
    if len(digits.lstrip("-")) > MAX_INT_DIGITS:
        raise bad_request(f"a number in the request body has {len(digits.lstrip('-'))} digits, over the "
                          f"limit of {MAX_INT_DIGITS}", code="invalid_json")
    return int(digits)


def _parse_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise bad_request(f"the number {text[:40]} in the request body is out of range", code="invalid_json")
    return value


def _no_constant(name: str) -> None:
    raise bad_request(f"{name} is not JSON (a number must be finite)", code="invalid_json")


def _too_deep() -> ApiError:
    return bad_request(f"the request body is nested more than {MAX_DEPTH} levels deep", code="invalid_json")


def _check_tree(body: Any) -> None:
    """Depth and strings, checked once over the whole tree (iteratively: no recursion to exhaust)."""
    stack = [(body, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, (dict, list)):
            if depth > MAX_DEPTH:
                raise _too_deep()
            items = [*value.keys(), *value.values()] if isinstance(value, dict) else value
            stack.extend((item, depth + 1) for item in items)
        elif isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:  # a lone surrogate escape (\ud800): no character, nothing to speak
                raise bad_request("a string in the request body holds a lone surrogate (\\ud800-\\udfff), "
                                  "which is not a character", code="invalid_json") from None


def decode_body(parse: Callable[[ModelInfo, bytes], T], info: ModelInfo, raw: bytes) -> T:
    """`parse(info, raw)`, where any failure to read the client's bytes is a 400, never a 500.

    The parsers check each field's type before use; this is the net under them, for a shape no
    check foresaw (a comparison of mixed types, a missing key): it is still the body's fault."""
    try:
        return parse(info, raw)
    except ApiError:
        raise
    except SpecError as exc:  # a SpeakRequest field the spec refused
        raise from_engine(exc) from None
    except (TypeError, ValueError, KeyError, IndexError, AttributeError, RecursionError, OverflowError) as exc:
        log.warning("a request body no check foresaw: %s: %s", type(exc).__name__, exc, exc_info=True)
        raise bad_request(f"the request body could not be read: {type(exc).__name__}: {exc}",
                          code="invalid_body") from None


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


def get_list(body: dict[str, Any], key: str, item: type, default: Any = None, *, where: str = "") -> Any:
    """`body[key]` checked to be an array whose every element is of type `item`."""
    value = get(body, key, list, default, where=where)
    for i, element in enumerate(value or ()):
        if isinstance(element, bool) and item is not bool or not isinstance(element, item):
            name = f"{where}{key}[{i}]"
            raise bad_request(f"{name!r} must be {_json_type(item())}, not {_json_type(element)}", name, "invalid_type")
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


def check_delivery(info: ModelInfo, body: dict[str, Any]) -> tuple[float | None, str | None, int | None]:
    """speed, instructions and sample_rate, as the speech body and the stream's session.config both take them:
    applied where the card can, refused naming the field where it cannot; None where the default is meant."""
    # speed goes to the engine, which applies it where the card can (a sentence voice's length scale) and
    # refuses it, naming the field, where it cannot; 1.0, the default, is the same as leaving it out
    speed = get(body, "speed", (int, float))
    speed = None if speed is None or speed == 1.0 else float(speed)
    if speed is not None and info.speed_range is None:
        raise bad_request(f"speed {speed:g} is not supported: model {info.names[-1]!r} has no speed control (a "
                          "sentence voice such as piper_joe has); leave speed out or at 1.0", "speed",
                          "unsupported_value")
    if speed is not None and not info.speed_range[0] <= speed <= info.speed_range[1]:
        raise bad_request(f"'speed' must be between {info.speed_range[0]:g} and {info.speed_range[1]:g}, "
                          f"got {speed:g}", "speed")
    instructions = get(body, "instructions", str, "").strip() or None
    if instructions is not None and not info.takes_instructions:
        raise bad_request(f"'instructions' is not supported by model {info.names[-1]!r}: only a card whose "
                          "thinker has a system prompt (the Qwen cards) takes them; leave it out",
                          "instructions", "unsupported_parameter")
    sample_rate = get(body, "sample_rate", int)
    if sample_rate is not None and not MIN_SAMPLE_RATE <= sample_rate <= MAX_SAMPLE_RATE:
        raise bad_request(f"'sample_rate' must be between {MIN_SAMPLE_RATE} and {MAX_SAMPLE_RATE} Hz, "
                          f"got {sample_rate}", "sample_rate")
    return speed, instructions, sample_rate if sample_rate != info.sample_rate else None


def speech_body(info: ModelInfo, raw: bytes) -> SpeechBody:
    """POST /v1/audio/speech: OpenAI's fields plus our `seed`, `mode`, `max_tokens`, `stream`, `sample_rate`."""
    body = parse_json(raw)
    check_fields(body, {"model", "input", "voice", "response_format", "speed", "instructions", "stream_format",
                        "stream", "seed", "mode", "max_tokens", "sample_rate"})
    check_model(info, get(body, "model", str, required=True))
    text = get(body, "input", str, required=True)
    voice = check_voice(info, body.get("voice"))
    fmt = get(body, "response_format", str)  # None: the server's default (mp3, as OpenAI's, where it can)
    if fmt is not None and fmt not in SPEECH_FORMATS:
        raise bad_request(f"unknown response_format {fmt!r} (supported: {', '.join(SPEECH_FORMATS)})", "response_format")
    speed, instructions, sample_rate = check_delivery(info, body)
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
    request = SpeakRequest(text, mode=mode, voice=voice, speed=speed, instructions=instructions, **common)
    return SpeechBody(request, fmt, stream, sample_rate)
