"""WebSocket /v1/audio/speech/stream: text deltas in, each sentence or clause spoken as soon as it is complete.

The message shapes are vllm-omni's, so its clients work unchanged:

    client -> server   {"type": "session.config", "voice": ..., "response_format": "pcm", "split_granularity": ...}
                       (vllm-omni's fields: stream_config.py says which are honoured, ignored or refused)
                       {"type": "input.text", "text": "..."}   (any number)
                       {"type": "input.done"}
                       {"type": "session.close"}   (optional: ends the session at once, unsaid pieces dropped)
    server -> client   {"type": "audio.start", "sentence_index": N, "sentence_text": "...", "format": ..., "sample_rate": R}
                       binary frames: the sentence's audio in `format`, as it is made (one file per sentence)
                       {"type": "audio.done", "sentence_index": N, "total_bytes": B, "sample_rate": R, "error": false}
                       {"type": "session.done", "total_sentences": N}
                       {"type": "warning", "message": "...", "param": F, "code": "ignored_parameter"}
                                                           (after session.config, per field it ignores)
                       {"type": "error", "message": "...", "code": ...}   (a bad message; the session goes on)

A client silent for `ws_idle_timeout_s` (no session.config, or no text while nothing is left to send) gets an
error with code "idle_timeout" and the socket closes with 1008 and the reason; its unspoken pieces are cancelled.

Each piece is its own request on the server's one engine, submitted the moment its text is complete, so a
piece is computed while the one before it is still being sent; audio goes out in text order. The socket
closing cancels every piece not yet spoken.
"""

from __future__ import annotations

import json
from collections import deque
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

_END = object()  # after the last piece: the speaker sends session.done
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


class _Pacer:
    """When each complete piece goes to the engine: at once, unless an earlier piece has not been heard yet
    (no audio out, not done). So a piece's first audio never shares the engine with the pieces after it
    (text sent whole would otherwise start all its sentences together), and the next piece is computed
    while the one before it is still being sent. Runs on the event loop only."""

    def __init__(self, ctx, config: StreamConfig, speaker) -> None:
        self.ctx, self.config, self.speaker = ctx, config, speaker
        self.waiting: deque[str] = deque()
        self.unheard = None  # the ticket of the piece submitted and not yet heard
        self.ended = False  # input.done came: _END follows the last piece
        self.tickets: list = []  # every piece submitted, cancelled when the session ends
        self.unspoken = 0  # pieces handed to the speaker and not yet all sent
        self.last_spoken = anyio.current_time()  # when the speaker last finished a piece

    @property
    def busy(self) -> bool:
        """Something is still to be said: the client waiting for it is not idle."""
        return bool(self.waiting) or self.unspoken > 0

    def spoken(self) -> None:
        self.unspoken -= 1
        self.last_spoken = anyio.current_time()

    def add(self, texts: list[str], ended: bool = False) -> None:
        self.waiting.extend(texts)
        self.ended = self.ended or ended
        self.pump()

    def heard(self, ticket) -> None:
        """`ticket`'s piece has audio out, or is over."""
        if ticket is self.unheard:
            self.unheard = None
            self.pump()

    def pump(self) -> None:
        while self.waiting and self.unheard is None:
            text = self.waiting.popleft()
            submitted = _submit(self.ctx, self.config, text)
            if not isinstance(submitted, ApiError):
                self.tickets.append(submitted)
                self.unheard = submitted
            self.unspoken += 1
            self.speaker.send_nowait((text, submitted))
        if self.ended and not self.waiting:
            self.ended = False
            self.speaker.send_nowait(_END)
            self.speaker.close()


async def session(ctx, ws: WebSocket) -> None:
    """One WebSocket session: a config, text deltas, the end; audio for every piece, in order."""
    await ws.accept()
    pacer = None
    try:
        config = await _receive_config(ctx, ws)
        if config is None:
            return
        to_speaker, from_listener = anyio.create_memory_object_stream(max_buffer_size=1 << 16)
        pacer = _Pacer(ctx, config, to_speaker)
        async with anyio.create_task_group() as tasks:
            async def speak() -> None:
                try:
                    await _speak(ctx, ws, config, from_listener, pacer)
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
        for param, warning in config.warnings:  # vllm-omni fields this server cannot honour and need not refuse
            await ws.send_json({"type": "warning", "message": warning, "param": param, "code": "ignored_parameter"})
        return config


async def _listen(ctx, ws: WebSocket, config: StreamConfig, pacer: _Pacer) -> None:
    """Read deltas until input.done, handing each piece to the pacer the moment its text is complete; return
    when the client disconnects (after the speaker closed the session, or before), or after closing a session
    that stayed idle."""
    limit, timeout_s = ctx.options.max_body_bytes, ctx.options.ws_idle_timeout_s
    ended, last_message = False, anyio.current_time()

    def quiet_since():  # after input.done the speaker ends the session; nothing more is awaited
        return None if ended or pacer.busy else max(last_message, pacer.last_spoken)

    while True:
        message = await _receive(ws, timeout_s, quiet_since)
        if message is None:
            return await _close_idle(ws, timeout_s, "message")
        last_message = anyio.current_time()
        if message["type"] == "websocket.disconnect":
            return
        if ended:
            continue  # after input.done nothing more is read; the speaker closes the session
        try:
            msg = _parse(message.get("text"), limit)
            if msg["type"] == "input.text":
                check_fields(msg, {"type", "text"})
                pacer.add(config.splitter.add(get(msg, "text", str, required=True)))
            elif msg["type"] == "input.done":
                check_fields(msg, {"type"})
                pacer.add(config.splitter.flush(), ended=True)
                ended = True
            elif msg["type"] == "session.close":  # vllm-omni's: the client is done; whatever is unsaid is dropped
                return await ws.close(1000)
            else:
                raise bad_request(f"unknown message type {msg['type']!r} (input.text, input.done, session.close)",
                                  "type")
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


async def _speak(ctx, ws: WebSocket, config: StreamConfig, pieces, pacer: _Pacer) -> None:
    """Send each piece's audio in order; session.done after the last, then close."""
    index = 0
    async with pieces:
        async for item in pieces:
            if item is _END:
                await ws.send_json({"type": "session.done", "total_sentences": index})
                await ws.close(1000)
                return
            text, ticket = item
            try:
                await _speak_one(ctx, ws, config, index, text, ticket, pacer.heard)
            finally:
                pacer.spoken()
            index += 1


async def _speak_one(ctx, ws: WebSocket, config: StreamConfig, index: int, text: str, ticket, heard) -> None:
    encoder = StreamEncoder(config.format, config.sample_rate or ctx.sample_rate)
    await ws.send_json({"type": "audio.start", "sentence_index": index, "sentence_text": text,
                        "format": config.format, "sample_rate": encoder.output_rate})
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
    payload = {"type": "audio.done", "sentence_index": index, "total_bytes": total, "sample_rate": encoder.output_rate,
               "error": error is not None}
    if done is not None and error is None:
        payload["usage"] = usage(ctx, done)
    await ws.send_json(payload)


async def _hold(held: list, data: bytes) -> None:
    held.append(data)  # stream_audio false: the piece goes out as one frame at its end
