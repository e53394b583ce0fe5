"""POST /v1/chat/completions with modalities ["text", "audio"]: the thinker answers, the talker speaks it.

The last user message may carry one `input_audio` part (base64 `wav` or `mp3`) and `image_url` parts (data URLs
of base64 PNG or JPEG; a remote http(s) URL is refused: the server fetches nothing): a server whose program
listens and sees (`omni serve --program chat`) hears and sees them through the card's encoders before it answers.
The messages before it are the conversation's history, heard and seen as `omni chat --history` hears its turns
(messages.py says how each maps, and its bounds).

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
from .bodies import (
    ModelInfo,
    bad_request,
    check_common,
    check_fields,
    check_model,
    check_voice,
    get,
    get_list,
    parse_json,
)
from .messages import conversation
from .responses import Send, send_body, send_error, send_start, send_whole, sse
from .speech import accepted, ended_badly
from .worker import Ticket

CHAT_FORMATS = {"wav": "wav", "pcm16": "pcm", "flac": "flac", "mp3": "mp3", "opus": "opus"}  # OpenAI name -> ours


@dataclass(frozen=True)
class ChatBody:
    request: SpeakRequest
    model: str
    audio_format: str  # ours: wav, pcm, flac, mp3, opus
    stream: bool
    include_usage: bool


def chat_body(info: ModelInfo, raw: bytes) -> ChatBody:
    body = parse_json(raw)
    check_fields(body, {"model", "messages", "modalities", "audio", "stream", "stream_options", "seed", "max_tokens",
                        "max_completion_tokens", "n", "user"})
    model = get(body, "model", str, required=True)
    check_model(info, model)
    said = conversation(get(body, "messages", list, required=True), info.max_text_chars)
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
    text, heard, images = said.text, said.heard, said.images
    needs_text = heard is None and not images  # a spoken or pictured question needs no text
    common = check_common(info, {**body, "max_tokens": tokens if tokens is not None else body.get("max_tokens")},
                          text if needs_text or text.strip() else "(heard)")
    request = SpeakRequest(text, mode="chat", voice=voice, audio=heard, images=images, history=said.history, **common)
    return ChatBody(request, model, fmt, stream, include_usage)


def _usage(ctx, done: RequestDone) -> dict[str, Any]:
    """Completion tokens: the thinker's reply and the talker's codes (prompt tokens are not counted: null)."""
    text, codes = ctx.token_counts(done.metrics.get("work_units", {}))
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
