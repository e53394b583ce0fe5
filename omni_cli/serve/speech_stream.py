"""WebSocket /v1/audio/speech/stream: text deltas in, each sentence or clause spoken as soon as it is complete.

The message shapes are vllm-omni's, so its clients work unchanged:

    client -> server   {"type": "session.config", "voice": ..., "response_format": "pcm", "split_granularity": ...}
                       (vllm-omni's fields: stream_config.py says which are honoured, ignored or refused;
                       sent again between utterances it replaces the config)
                       {"type": "input.text", "text": "..."}   (any number)
                       {"type": "input.done"}   (ends the utterance; the socket stays open for the next)
                       {"type": "session.close"}   (optional: ends the session at once, unsaid pieces dropped)
    server -> client   {"type": "audio.start", "utterance_index": U, "sentence_index": N, "sentence_text": "...",
                        "format": ..., "sample_rate": R}
                       binary frames: the sentence's audio in `format`, as it is made (one file per sentence)
                       {"type": "audio.done", "utterance_index": U, "sentence_index": N, "total_bytes": B,
                        "sample_rate": R, "error": false}
                       {"type": "session.done", "utterance_index": U, "total_sentences": N}   (per input.done)
                       {"type": "warning", "message": "...", "param": F, "code": "ignored_parameter"}
                                                           (after session.config, per field it ignores)
                       {"type": "error", "message": "...", "code": ...}   (a bad message; the session goes on)

utterance_index counts input.done cycles from 0; sentence_index counts pieces within one utterance.

A client silent for `ws_idle_timeout_s` (no session.config, or no text while nothing is left to send) gets an
error with code "idle_timeout" and the socket closes with 1008 and the reason; its unspoken pieces are cancelled.
Silent that long after an utterance was said whole (nothing begun since), the socket closes with 1000 and no
error: a client that reads until the close, expecting one utterance per socket, ends as it did before.

Each piece is its own request on the server's one engine, submitted the moment its text is complete, so a
piece is computed while the one before it is still being sent; audio goes out in text order. The socket
closing cancels every piece not yet spoken.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
from starlette.websockets import WebSocket, WebSocketDisconnect

from ..audio.stream_encoder import StreamEncoder
from ..spec.stream import AudioChunk, RequestDone
from .bodies import check_fields, get
from .errors import ApiError, bad_request
from .responses import encoded, finished
from .speech import accepted, ended_badly, usage
from .stream_config import StreamConfig
from .stream_pacer import Pacer, Piece, UtteranceEnd

IDLE_CLOSE = 1008  # RFC 6455's generic policy code: no code is defined for a peer that stays silent


async def _send_error(ws: WebSocket, error: ApiError) -> None:
    await ws.send_json({"type": "error", "message": error.message, "code": error.code, "param": error.param})


def _parse(raw: str | None, limit: int) -> dict[str, Any]:
    if raw is None:
        raise bad_request("messages must be JSON text frames, not binary", code="invalid_json")
    if len(raw) > limit:
        raise ApiError(413, f"the message is {len(raw)} characters, over the server's limit of {limit}",
                       code="request_too_large")
    try:
        msg = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise bad_request(f"the message is not valid JSON: {exc.msg}", code="invalid_json") from None
    if not isinstance(msg, dict) or not isinstance(msg.get("type"), str):
        raise bad_request("a message must be a JSON object with a string 'type'", "type", "invalid_json")
    return msg


async def session(ctx, ws: WebSocket) -> None:
    """One WebSocket session: a config, then utterances (text deltas, input.done); audio for every piece, in order."""
    await ws.accept()
    pacer = None
    try:
        config = await _receive_config(ctx, ws)
        if config is None:
            return
        to_speaker, from_listener = anyio.create_memory_object_stream(max_buffer_size=1 << 16)
        pacer = Pacer(lambda piece_config, text: _submit(ctx, piece_config, text), to_speaker)
        async with anyio.create_task_group() as tasks:
            async def speak() -> None:
                try:
                    await _speak(ctx, ws, from_listener, pacer)
                except (WebSocketDisconnect, RuntimeError):  # the client went away while we sent
                    tasks.cancel_scope.cancel()

            tasks.start_soon(speak)
            await _listen(ctx, ws, config, pacer)
            tasks.cancel_scope.cancel()  # the client left: whatever is still to be said is not
    except WebSocketDisconnect:
        pass
    finally:
        for ticket in pacer.tickets if pacer is not None else ():
            ctx.worker.cancel(ticket)


async def _receive(ws: WebSocket, timeout_s: float, quiet_since) -> dict | None:
    """The next message, or None once the client has been silent for `timeout_s` since `quiet_since()` (the
    last moment anything happened; None while something is still being said, which is never idle)."""
    while True:
        since = quiet_since()
        wait = timeout_s if since is None else since + timeout_s - anyio.current_time()
        if wait <= 0:
            return None
        with anyio.move_on_after(wait):
            return await ws.receive()


async def _close_idle(ws: WebSocket, timeout_s: float, waited_for: str) -> None:
    reason = f"idle timeout: no {waited_for} for {timeout_s:g} s"
    try:
        await _send_error(ws, ApiError(408, f"{reason}; closing (the server's --ws-idle-timeout)",
                                       code="idle_timeout"))
        await ws.close(IDLE_CLOSE, reason)
    except (WebSocketDisconnect, RuntimeError, OSError):  # the client left at the same moment
        pass


async def _close_finished(ws: WebSocket, timeout_s: float) -> None:
    """Silent after its last utterance was said whole: the session is over, a normal close and no error (a
    client that reads until the close, as one-utterance clients do, ends where it always did)."""
    try:
        await ws.close(1000, f"idle: no message for {timeout_s:g} s after the last utterance")
    except (WebSocketDisconnect, RuntimeError, OSError):
        pass


async def _send_warnings(ws: WebSocket, config: StreamConfig) -> None:
    for param, warning in config.warnings:  # vllm-omni fields this server cannot honour and need not refuse
        await ws.send_json({"type": "warning", "message": warning, "param": param, "code": "ignored_parameter"})


async def _receive_config(ctx, ws: WebSocket) -> StreamConfig | None:
    limit, timeout_s = ctx.options.max_body_bytes, ctx.options.ws_idle_timeout_s
    opened = anyio.current_time()
    while True:
        message = await _receive(ws, timeout_s, lambda: opened)
        if message is None:
            await _close_idle(ws, timeout_s, "session.config")
            return None
        if message["type"] == "websocket.disconnect":
            raise WebSocketDisconnect(message.get("code", 1000))
        try:
            msg = _parse(message.get("text"), limit)
            if msg["type"] != "session.config":
                raise bad_request(f"the first message must be session.config, not {msg['type']!r}", "type")
            config = StreamConfig(ctx, msg)
        except ApiError as error:
            await _send_error(ws, error)
            await ws.close(1008)
            return None
        await _send_warnings(ws, config)
        return config


async def _listen(ctx, ws: WebSocket, config: StreamConfig, pacer: Pacer) -> None:
    """Read messages, handing each piece to the pacer the moment its text is complete and each input.done as
    the end of an utterance; return when the client disconnects or sends session.close, or after closing a
    session that stayed idle."""
    limit, timeout_s = ctx.options.max_body_bytes, ctx.options.ws_idle_timeout_s
    last_message, in_utterance = anyio.current_time(), False  # in_utterance: text came since the last input.done

    def quiet_since():  # while something is still being said the client is not idle
        return None if pacer.busy else max(last_message, pacer.last_spoken)

    while True:
        message = await _receive(ws, timeout_s, quiet_since)
        if message is None:
            if pacer.utterance > 0 and not in_utterance:
                return await _close_finished(ws, timeout_s)
            return await _close_idle(ws, timeout_s, "message")
        last_message = anyio.current_time()
        if message["type"] == "websocket.disconnect":
            return
        try:
            msg = _parse(message.get("text"), limit)
            if msg["type"] == "input.text":
                check_fields(msg, {"type", "text"})
                text = get(msg, "text", str, required=True)
                in_utterance = in_utterance or bool(text.strip())
                pacer.add(config.splitter.add(text), config)
            elif msg["type"] == "input.done":  # vllm-omni's flush: the utterance ends, the socket stays open
                check_fields(msg, {"type"})
                pacer.end_utterance(config.splitter.flush(), config)
                in_utterance = False
            elif msg["type"] == "session.config":  # between utterances it replaces the config (vllm-omni's)
                if in_utterance:
                    raise bad_request("session.config cannot change an utterance in progress; send input.done "
                                      "first", "type", "utterance_in_progress")
                config = StreamConfig(ctx, msg)  # a bad one is an error and the previous config stays
                await _send_warnings(ws, config)
            elif msg["type"] == "session.close":  # vllm-omni's: the client is done; whatever is unsaid is dropped
                return await ws.close(1000)
            else:
                raise bad_request(f"unknown message type {msg['type']!r} (input.text, input.done, session.config, "
                                  "session.close)", "type")
        except ApiError as error:
            await _send_error(ws, error)


def _submit(ctx, config: StreamConfig, text: str):
    try:
        return ctx.worker.submit(config.request(text), "stream", config.sample_rate)
    except ApiError as error:
        return error
    except Exception as exc:  # a piece the request spec refuses: said for that piece, the session goes on
        from .errors import from_engine

        return from_engine(exc)


async def _speak(ctx, ws: WebSocket, items, pacer: Pacer) -> None:
    """Send each piece's audio in order, and session.done where each utterance ends."""
    index = 0  # the piece's place in its utterance
    async with items:
        async for item, ticket in items:
            try:
                if isinstance(item, UtteranceEnd):
                    await ws.send_json({"type": "session.done", "utterance_index": item.utterance,
                                        "total_sentences": index})
                    index = 0
                else:
                    await _speak_one(ctx, ws, item, index, ticket, pacer.heard)
                    index += 1
            finally:
                pacer.spoken()


async def _speak_one(ctx, ws: WebSocket, piece: Piece, index: int, ticket, heard) -> None:
    config, text = piece.config, piece.text
    encoder = StreamEncoder(config.format, config.sample_rate or ctx.sample_rate)
    await ws.send_json({"type": "audio.start", "utterance_index": piece.utterance, "sentence_index": index,
                        "sentence_text": text, "format": config.format, "sample_rate": encoder.output_rate})
    total, held, error, done = 0, [], None, None
    try:
        error = ticket if isinstance(ticket, ApiError) else await accepted(ticket)
        prefix = encoder.start()
        while error is None and done is None:
            event = await ticket.events.get()
            if isinstance(event, AudioChunk):
                heard(ticket)  # the next piece may start now
                async for data in encoded(encoder, event.samples):
                    data, prefix = prefix + data, b""
                    total += len(data)
                    await (ws.send_bytes(data) if config.stream_audio else _hold(held, data))
            elif isinstance(event, RequestDone):
                done, error = event, ended_badly(event)
        if error is None:
            data = prefix + await finished(encoder)
            total += len(data)
            held.append(data)
            if b"".join(held):
                await ws.send_bytes(b"".join(held))
    finally:
        encoder.close()
        heard(ticket)  # a piece that ended (or failed) without audio lets the next one start too
    if error is not None:
        await _send_error(ws, error)
    payload = {"type": "audio.done", "utterance_index": piece.utterance, "sentence_index": index,
               "total_bytes": total, "sample_rate": encoder.output_rate, "error": error is not None}
    if done is not None and error is None:
        payload["usage"] = usage(ctx, done)
    await ws.send_json(payload)


async def _hold(held: list, data: bytes) -> None:
    held.append(data)  # stream_audio false: the piece goes out as one frame at its end
