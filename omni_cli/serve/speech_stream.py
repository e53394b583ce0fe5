"""WebSocket /v1/audio/speech/stream: text deltas in, each sentence or clause spoken as soon as it is complete.

The message shapes are vllm-omni's, so its clients work unchanged:

    client -> server   {"type": "session.config", "voice": ..., "response_format": "pcm", "split_granularity": ...}
                       {"type": "input.text", "text": "..."}   (any number)
                       {"type": "input.done"}
    server -> client   {"type": "audio.start", "sentence_index": N, "sentence_text": "...", "format": ..., "sample_rate": R}
                       binary frames: the sentence's audio in `format`, as it is made (one file per sentence)
                       {"type": "audio.done", "sentence_index": N, "total_bytes": B, "sample_rate": R, "error": false}
                       {"type": "session.done", "total_sentences": N}
                       {"type": "error", "message": "...", "code": ...}   (a bad message; the session goes on)

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
from ..spec import SpeakRequest
from ..spec.stream import AudioChunk, RequestDone
from .bodies import STREAMABLE, check_common, check_fields, check_model, check_voice, get
from .clauses import GRANULARITIES, ClauseSplitter
from .errors import ApiError, bad_request
from .responses import encoded, finished
from .speech import accepted, ended_badly, usage

CONFIG_FIELDS = {"type", "model", "voice", "response_format", "split_granularity", "stream_audio", "seed", "mode",
                 "max_tokens"}
_END = object()  # after the last piece: the speaker sends session.done


class _Config:
    def __init__(self, ctx, msg: dict[str, Any]) -> None:
        check_fields(msg, CONFIG_FIELDS)
        model = get(msg, "model", str)
        if model is not None:
            check_model(ctx.info, model)
        self.voice = check_voice(ctx.info, msg.get("voice"))
        self.format = get(msg, "response_format", str, "pcm")
        reason = _can_write(ctx, self.format) if self.format in STREAMABLE else "it cannot be streamed"
        if reason is not None:
            raise ApiError(400, f"response_format {self.format!r}: {reason} (stream {', '.join(STREAMABLE)})",
                           param="response_format", code="unsupported_value")
        granularity = get(msg, "split_granularity", str, "sentence")
        if granularity not in GRANULARITIES:
            raise bad_request(f"unknown split_granularity {granularity!r} (supported: {', '.join(GRANULARITIES)})",
                              "split_granularity")
        self.splitter = ClauseSplitter(granularity, ctx.info.max_text_chars)
        self.stream_audio = get(msg, "stream_audio", bool, True)  # False: one binary frame per piece, at its end
        self.mode = get(msg, "mode", str)
        if self.mode not in (None, "echo", "chat"):
            raise bad_request(f"unknown mode {self.mode!r} (echo: speak the input; chat: speak a reply to it)", "mode")
        self.common = check_common(ctx.info, msg, "x")  # seed, max_tokens; each piece's length is checked apart

    def request(self, text: str) -> SpeakRequest:
        return SpeakRequest(text, mode=self.mode, voice=self.voice, **self.common)


def _can_write(ctx, fmt: str) -> str | None:
    from .speech import can_write

    return can_write(ctx, fmt)


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

    def __init__(self, ctx, config: _Config, speaker) -> None:
        self.ctx, self.config, self.speaker = ctx, config, speaker
        self.waiting: deque[str] = deque()
        self.unheard = None  # the ticket of the piece submitted and not yet heard
        self.ended = False  # input.done came: _END follows the last piece
        self.tickets: list = []  # every piece submitted, cancelled when the session ends

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


async def _receive_config(ctx, ws: WebSocket) -> _Config | None:
    limit = ctx.options.max_body_bytes
    while True:
        message = await ws.receive()
        if message["type"] == "websocket.disconnect":
            raise WebSocketDisconnect(message.get("code", 1000))
        try:
            msg = _parse(message.get("text"), limit)
            if msg["type"] != "session.config":
                raise bad_request(f"the first message must be session.config, not {msg['type']!r}", "type")
            return _Config(ctx, msg)
        except ApiError as error:
            await _send_error(ws, error)
            await ws.close(1008)
            return None


async def _listen(ctx, ws: WebSocket, config: _Config, pacer: _Pacer) -> None:
    """Read deltas until input.done, handing each piece to the pacer the moment its text is complete; return
    when the client disconnects (after the speaker closed the session, or before)."""
    limit = ctx.options.max_body_bytes
    ended = False
    while True:
        message = await ws.receive()
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
            else:
                raise bad_request(f"unknown message type {msg['type']!r} (input.text, input.done)", "type")
        except ApiError as error:
            await _send_error(ws, error)


def _submit(ctx, config: _Config, text: str):
    try:
        return ctx.worker.submit(config.request(text), "stream")
    except ApiError as error:
        return error
    except Exception as exc:  # a piece the request spec refuses: said for that piece, the session goes on
        from .errors import from_engine

        return from_engine(exc)


async def _speak(ctx, ws: WebSocket, config: _Config, pieces, pacer: _Pacer) -> None:
    """Send each piece's audio in order; session.done after the last, then close."""
    index = 0
    async with pieces:
        async for item in pieces:
            if item is _END:
                await ws.send_json({"type": "session.done", "total_sentences": index})
                await ws.close(1000)
                return
            text, ticket = item
            await _speak_one(ctx, ws, config, index, text, ticket, pacer.heard)
            index += 1


async def _speak_one(ctx, ws: WebSocket, config: _Config, index: int, text: str, ticket, heard) -> None:
    encoder = StreamEncoder(config.format, ctx.sample_rate)
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
