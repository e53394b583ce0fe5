"""POST /v1/chat/completions with modalities ["text", "audio"]: the thinker answers, the talker speaks it.

The last user message may carry one `input_audio` part (base64 `wav` or `mp3`) and `image_url` parts (data URLs
of base64 PNG or JPEG; a remote http(s) URL is refused: the server fetches nothing): a server whose program
listens and sees (`omni serve --program chat`) hears and sees them through the card's encoders before it answers.

OpenAI's audio-output shape: `message.audio` holds the base64 audio and its transcript (the
thinker's reply); with `stream: true`, `delta.audio.transcript` pieces and `delta.audio.data`
chunks (pcm16) go out as they are made, interleaved as the engine makes them.
"""

from __future__ import annotations

import base64
import time
from dataclasses import dataclass
from typing import Any

from ..audio.encode import can_encode, encode, pcm16_bytes
from ..spec import SpeakRequest
from ..spec.stream import AudioChunk, RequestDone, TextPiece
from .bodies import (ModelInfo, bad_request, check_common, check_fields, check_model, check_voice, get, get_list,
                     parse_json)
from .images import image_part
from .responses import Send, send_body, send_error, send_start, send_whole, sse
from .speech import accepted, ended_badly
from .worker import Ticket

CHAT_FORMATS = {"wav": "wav", "pcm16": "pcm", "flac": "flac", "mp3": "mp3", "opus": "opus"}  # OpenAI name -> ours
ROLES = ("system", "developer", "user", "assistant")


@dataclass(frozen=True)
class ChatBody:
    request: SpeakRequest
    model: str
    audio_format: str  # ours: wav, pcm, flac, mp3, opus
    stream: bool
    include_usage: bool


AUDIO_INPUT_FORMATS = ("wav", "mp3")


def _message_text(message: Any, i: int) -> tuple[str, str, list[tuple[bytes, str, str]], list]:
    """(role, text, audio parts as (bytes, format, param), images as SeenImage)."""
    where = f"messages[{i}]."
    if not isinstance(message, dict):
        raise bad_request(f"'messages[{i}]' must be an object", f"messages[{i}]", "invalid_type")
    check_fields(message, {"role", "content", "name", "audio", "refusal"}, where)
    role = get(message, "role", str, where=where, required=True)
    if role not in ROLES:
        raise bad_request(f"unknown role {role!r} in messages[{i}] (known: {', '.join(ROLES)})", where + "role")
    content = get(message, "content", (str, list), "", where=where)
    if isinstance(content, str):
        return role, content, [], []
    texts, audio, images = [], [], []
    for j, part in enumerate(content):
        if isinstance(part, dict) and part.get("type") == "input_audio":
            audio.append(_input_audio(part, f"{where}content[{j}]"))
            continue
        if isinstance(part, dict) and part.get("type") == "image_url":
            images.append(image_part(part, f"{where}content[{j}]"))
            continue
        if not isinstance(part, dict) or part.get("type") != "text" or not isinstance(part.get("text"), str):
            raise bad_request(f"messages[{i}].content[{j}]: only text, input_audio and image_url parts are supported "
                              "by this server", f"{where}content[{j}]", "unsupported_content")
        texts.append(part["text"])
    return role, "".join(texts), audio, images


def _input_audio(part: dict[str, Any], where: str) -> tuple[bytes, str, str]:
    check_fields(part, {"type", "input_audio"}, where + ".")
    inner = get(part, "input_audio", dict, where=where + ".", required=True)
    check_fields(inner, {"data", "format"}, where + ".input_audio.")
    fmt = get(inner, "format", str, where=where + ".input_audio.", required=True)
    if fmt not in AUDIO_INPUT_FORMATS:
        raise bad_request(f"{where}.input_audio.format {fmt!r}: known formats are {', '.join(AUDIO_INPUT_FORMATS)}",
                          where + ".input_audio.format", "unsupported_value")
    data = get(inner, "data", str, where=where + ".input_audio.", required=True)
    try:
        raw = base64.b64decode(data, validate=True)
    except ValueError:
        raise bad_request(f"{where}.input_audio.data is not base64", where + ".input_audio.data") from None
    return raw, fmt, where + ".input_audio.data"


def _heard(parts: list[tuple[bytes, str, str]]):
    """The last user message's audio as an AudioSource, or None; one part at most."""
    from ..audio.heard import AudioInputError, read_wav_bytes

    if not parts:
        return None
    if len(parts) > 1:
        raise bad_request("one input_audio part per request (the question's audio)", parts[1][2], "unsupported_value")
    raw, fmt, param = parts[0]
    try:
        return read_wav_bytes(raw, f"the {fmt} audio")
    except AudioInputError as exc:
        raise bad_request(str(exc), param) from None


def chat_body(info: ModelInfo, raw: bytes) -> ChatBody:
    body = parse_json(raw)
    check_fields(body, {"model", "messages", "modalities", "audio", "stream", "stream_options", "seed", "max_tokens",
                        "max_completion_tokens", "n", "user"})
    model = get(body, "model", str, required=True)
    check_model(info, model)
    messages = get(body, "messages", list, required=True)
    texts = [_message_text(m, i) for i, m in enumerate(messages)]
    user = [(text, audio, images) for role, text, audio, images in texts if role == "user"]
    if not user:
        raise bad_request("'messages' has no user message to answer", "messages", "missing_required_parameter")
    modalities = get_list(body, "modalities", str, ["text"])
    if sorted(modalities) != ["audio", "text"]:
        raise bad_request(f"modalities {modalities!r}: this model answers in text and audio; "
                          "set modalities to [\"text\", \"audio\"]", "modalities", "unsupported_value")
    audio = get(body, "audio", dict, required=True)
    check_fields(audio, {"voice", "format"}, "audio.")
    voice = check_voice(info, audio.get("voice"), "audio.voice")
    fmt_name = get(audio, "format", str, "wav", where="audio.")
    fmt = CHAT_FORMATS.get(fmt_name)
    reason = "unknown format" if fmt is None else can_encode(fmt, info.sample_rate)
    if reason is not None:
        raise bad_request(f"audio.format {fmt_name!r}: {reason} (known: {', '.join(CHAT_FORMATS)})", "audio.format")
    if get(body, "n", int, 1) != 1:
        raise bad_request("'n' must be 1: one answer per request", "n", "unsupported_value")
    stream = get(body, "stream", bool, False)
    if stream and fmt != "pcm":
        raise bad_request("streamed audio is pcm16: set audio.format to \"pcm16\" with stream true",
                          "audio.format", "unsupported_value")
    options = get(body, "stream_options", dict, {})
    check_fields(options, {"include_usage"}, "stream_options.")
    include_usage = get(options, "include_usage", bool, False, where="stream_options.")
    tokens = get(body, "max_completion_tokens", int)
    text, heard, images = user[-1][0], _heard(user[-1][1]), tuple(user[-1][2])
    needs_text = heard is None and not images  # a spoken or pictured question needs no text
    common = check_common(info, {**body, "max_tokens": tokens if tokens is not None else body.get("max_tokens")},
                          text if needs_text or text.strip() else "(heard)")
    # the request carries one turn: the answer is to the last user message (earlier turns are not seen)
    request = SpeakRequest(text, mode="chat", voice=voice, audio=heard, images=images, **common)
    return ChatBody(request, model, fmt, stream, include_usage)


def _usage(ctx, done: RequestDone) -> dict[str, Any]:
    """Completion tokens: the thinker's reply and the talker's codes (prompt tokens are not counted: null)."""
    by_role = ctx.units_by_role(done.metrics.get("work_units", {}))
    text, codes = by_role.get("thinker", 0), by_role.get("talker", 0)
    return {"prompt_tokens": None, "completion_tokens": text + codes, "total_tokens": text + codes,
            "completion_tokens_details": {"text_tokens": text, "audio_tokens": codes},
            "omni": {"ttfa_s": done.metrics.get("ttfa_s"), "latency_s": done.metrics.get("latency_s"),
                     "audio_s": done.metrics.get("audio_s"), "stop_reasons": done.metrics.get("stop_reasons", {})}}


def _finish_reason(done: RequestDone) -> str:
    stops = done.metrics.get("stop_reasons", {}).values()
    return "length" if any(s in ("max_tokens", "max_positions") for s in stops) else "stop"


def produce(ctx, body: ChatBody, ticket: Ticket):
    return (lambda send: _stream(ctx, body, ticket, send)) if body.stream else (lambda send: _whole(ctx, body, ticket, send))


def _head(body: ChatBody, ticket: Ticket, kind: str) -> dict[str, Any]:
    return {"id": f"chatcmpl-{ticket.request_id}", "object": kind, "created": int(time.time()), "model": body.model}


async def _whole(ctx, body: ChatBody, ticket: Ticket, send: Send) -> None:
    headers = {"x-request-id": ticket.request_id}
    refusal = await accepted(ticket)
    if refusal is not None:
        return await send_error(send, refusal, headers)
    import numpy as np

    chunks, text = [], []
    while not isinstance(event := await ticket.events.get(), RequestDone):
        if isinstance(event, AudioChunk):
            chunks.append(event.samples)
        elif isinstance(event, TextPiece):
            text.append(event.text)
    error = ended_badly(event)
    if error is not None:
        return await send_error(send, error, headers)
    samples = np.concatenate(chunks) if chunks else np.zeros(0, np.float32)
    audio = {"id": f"audio-{ticket.request_id}", "expires_at": int(time.time()) + 3600, "transcript": "".join(text),
             "data": base64.b64encode(encode(samples, ctx.sample_rate, body.audio_format)).decode()}
    message = {"role": "assistant", "content": None, "refusal": None, "audio": audio}
    out = {**_head(body, ticket, "chat.completion"),
           "choices": [{"index": 0, "message": message, "finish_reason": _finish_reason(event)}],
           "usage": _usage(ctx, event)}
    import json

    await send_whole(send, 200, "application/json", json.dumps(out).encode(), headers)


async def _stream(ctx, body: ChatBody, ticket: Ticket, send: Send) -> None:
    headers = {"x-request-id": ticket.request_id}
    refusal = await accepted(ticket)
    if refusal is not None:
        return await send_error(send, refusal, headers)
    await send_start(send, 200, "text/event-stream", {**headers, "cache-control": "no-store"})
    head = _head(body, ticket, "chat.completion.chunk")

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        return sse({**head, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})

    await send_body(send, chunk({"role": "assistant", "content": None}))
    audio_id = {"id": f"audio-{ticket.request_id}", "expires_at": int(time.time()) + 3600}
    while not isinstance(event := await ticket.events.get(), RequestDone):
        if isinstance(event, TextPiece):
            await send_body(send, chunk({"audio": {"transcript": event.text}}))
        elif isinstance(event, AudioChunk):
            data = base64.b64encode(pcm16_bytes(event.samples)).decode()
            await send_body(send, chunk({"audio": {**audio_id, "data": data}}))
            audio_id = {}  # the id travels once, with the first audio
    error = ended_badly(event)
    if error is not None:
        await send_body(send, sse(error.body()))
    else:
        await send_body(send, chunk({}, _finish_reason(event)))
        if body.include_usage:
            await send_body(send, sse({**head, "choices": [], "usage": _usage(ctx, event)}))
    await send_body(send, sse("[DONE]"))
    await send_body(send, b"", more=False)
