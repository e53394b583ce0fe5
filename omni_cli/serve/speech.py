"""POST /v1/audio/speech: the whole file, raw audio as it is made, or Server-Sent Events."""

from __future__ import annotations

import base64
from typing import Any

from ..audio.encode import can_encode, encode
from ..audio.stream_encoder import StreamEncoder
from ..spec.stream import AudioChunk, RequestDone, RequestStatus
from .bodies import SpeechBody
from .errors import ApiError, from_engine, server_error
from .responses import Send, encoded, finished, send_body, send_error, send_start, send_whole, sse
from .worker import Ticket

CONTENT_TYPES = {"wav": "audio/wav", "pcm": "audio/pcm", "flac": "audio/flac", "mp3": "audio/mpeg", "opus": "audio/ogg",
                 "aac": "audio/aac"}


def can_write(ctx, fmt: str, sample_rate: int | None = None) -> str | None:
    """None when this server can answer in `fmt` (at `sample_rate`, else the card's), else why not."""
    return can_encode(fmt, sample_rate or ctx.sample_rate)


async def accepted(ticket: Ticket) -> ApiError | None:
    """Wait until the engine took the request; its refusal as an ApiError (bad input, never fits)."""
    try:
        await ticket.accepted
    except Exception as exc:
        return from_engine(exc)
    return None


def ended_badly(done: RequestDone) -> ApiError | None:
    if done.status is RequestStatus.FINISHED:
        return None
    if done.status is RequestStatus.CANCELLED:
        return ApiError(503, f"the request was cancelled: {done.error or 'the server is stopping'}",
                        type="server_error", code="cancelled")
    return server_error(f"the request failed: {done.error}")


def usage(ctx, done: RequestDone) -> dict[str, Any]:
    """OpenAI's usage (text tokens in, codec tokens out) and ours: TTFA, latency, WorkUnits, stop reasons."""
    m = done.metrics
    units = m.get("work_units", {})
    text_tokens, codec_tokens = ctx.token_counts(units)
    return {"input_tokens": text_tokens, "output_tokens": codec_tokens, "total_tokens": text_tokens + codec_tokens,
            "omni": {"ttfa_s": m.get("ttfa_s"), "latency_s": m.get("latency_s"), "audio_s": m.get("audio_s"),
                     "work_units": units, "stop_reasons": m.get("stop_reasons", {}),
                     "truncated": m.get("truncated") or {}}}


def produce(ctx, body: SpeechBody, ticket: Ticket):
    """The producer for `EngineResponse`: which one depends on how the client asked to be answered."""
    if body.stream == "sse":
        return lambda send: _sse(ctx, body, ticket, send)
    if body.stream == "audio" or body.response_format == "pcm":  # headerless PCM streams at no cost
        return lambda send: _raw(ctx, body, ticket, send)
    return lambda send: _whole(ctx, body, ticket, send)


def _headers(ticket: Ticket) -> dict[str, str]:
    return {"x-request-id": ticket.request_id, "cache-control": "no-store"}


async def _whole(ctx, body: SpeechBody, ticket: Ticket, send: Send) -> None:
    refusal = await accepted(ticket)
    if refusal is not None:
        return await send_error(send, refusal, _headers(ticket))
    chunks = []
    while True:
        event = await ticket.events.get()
        if isinstance(event, AudioChunk):
            chunks.append(event.samples)
        elif isinstance(event, RequestDone):
            break
    error = ended_badly(event)
    if error is not None:
        return await send_error(send, error, _headers(ticket))
    import numpy as np

    samples = np.concatenate(chunks) if chunks else np.zeros(0, np.float32)
    data = encode(samples, ticket.sample_rate, body.response_format)
    await send_whole(send, 200, CONTENT_TYPES[body.response_format], data, _headers(ticket))


async def _raw(ctx, body: SpeechBody, ticket: Ticket, send: Send) -> None:
    refusal = await accepted(ticket)
    if refusal is not None:
        return await send_error(send, refusal, _headers(ticket))
    # each chunk is encoded as it arrives: WAV/PCM as is, FLAC/MP3/Ogg-Opus as the encoder emits frames/pages
    encoder = StreamEncoder(body.response_format, ticket.sample_rate)
    try:
        await send_start(send, 200, CONTENT_TYPES[body.response_format], _headers(ticket))
        head = encoder.start()  # a wav's stream header: sizes unknown, the data runs to the end
        if head:
            await send_body(send, head)
        while True:
            event = await ticket.events.get()
            if isinstance(event, AudioChunk):
                async for data in encoded(encoder, event.samples):
                    await send_body(send, data)
            elif isinstance(event, RequestDone):
                break
        if event.status is RequestStatus.FINISHED:
            await send_body(send, await finished(encoder), more=False)
        # else: the body is left unterminated, so the client sees a broken transfer, never a short file as whole
    finally:
        encoder.close()


async def _sse(ctx, body: SpeechBody, ticket: Ticket, send: Send) -> None:
    refusal = await accepted(ticket)
    if refusal is not None:
        return await send_error(send, refusal, _headers(ticket))
    await send_start(send, 200, "text/event-stream", _headers(ticket))
    # the deltas joined are the file in response_format: a wav's stream header travels in the first one
    encoder = StreamEncoder(body.response_format, ticket.sample_rate)
    try:
        prefix = encoder.start()
        while True:
            event = await ticket.events.get()
            if isinstance(event, AudioChunk):
                async for data in encoded(encoder, event.samples):
                    data, prefix = prefix + data, b""
                    await send_body(send, sse({"type": "speech.audio.delta", "audio": base64.b64encode(data).decode()}))
            elif isinstance(event, RequestDone):
                break
        error = ended_badly(event)
        if error is None:
            tail = prefix + await finished(encoder)
            if tail:
                await send_body(send, sse({"type": "speech.audio.delta", "audio": base64.b64encode(tail).decode()}))
            await send_body(send, sse({"type": "speech.audio.done", "usage": usage(ctx, event)}))
        else:
            await send_body(send, sse({"type": "error", **error.body()}))
        await send_body(send, b"", more=False)
    finally:
        encoder.close()
