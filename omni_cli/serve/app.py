"""The ASGI app: one engine thread shared by every route, the API key gate, body caps, OpenAI-shaped errors."""

from __future__ import annotations

import hashlib
import hmac
import logging
import time
from dataclasses import dataclass, replace
from typing import Any

import anyio
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, PlainTextResponse
from starlette.routing import Route, WebSocketRoute

from ..engine import Engine
from ..program.compiler import SPEED_RANGE
from ..spec.stream import RequestDone
from . import chat, speech, speech_stream
from .bodies import SPEECH_FORMATS, STREAMABLE, ModelInfo, decode_body, speech_body
from .errors import ApiError, server_error
from .metrics import Metrics
from .responses import EngineResponse
from .worker import EngineWorker

log = logging.getLogger("omni.serve")


@dataclass(frozen=True)
class ServeOptions:
    api_key: str | None = None
    concurrency: int = 8  # requests in the engine at once, interleaved and batched
    max_queue: int = 64  # accepted requests waiting for a slot; one more is a 429
    max_body_bytes: int = 64 << 10  # JSON bodies: the longest input a card takes is a few KiB of UTF-8
    max_chat_body_bytes: int = 32 << 20  # chat bodies may carry a spoken question as base64 audio
    max_header_bytes: int = 16 << 10  # all request headers together
    header_timeout_s: float = 10.0  # from a connection's first byte (or its last response) to its whole header block
    body_timeout_s: float = 30.0  # from the headers to the body's last byte
    keep_alive_s: float = 5.0  # an idle connection between requests is closed after this
    max_connections: int = 512  # open connections; past it the oldest that has not sent a whole request is closed
    ws_idle_timeout_s: float = 30.0  # a stream socket silent this long (nothing left to send) is closed


class ServeContext:
    """What every route shares: the engine thread, the served model's facts, the metrics."""

    def __init__(self, engine: Engine, card_name: str, options: ServeOptions):
        card = engine.program.card
        self.engine = engine  # read here only for gauges (budget, counts); driven only by the worker
        self.options = options
        self.sample_rate = card.sample_rate
        self.card = card
        self.metrics = Metrics()
        # the loops the program bills as text and codec tokens (ops declared with `counts`)
        self._counted = engine.program.counted_loops()
        voices = tuple(engine.program.voices())
        text_loop = card.loops.get(self._counted.get("text_tokens", ""))  # its max_tokens bounds a request's
        names = tuple(dict.fromkeys([card_name, card.model]))
        self.info = ModelInfo(names, voices, card.defaults.voice or (voices[0] if voices else None),
                              card.limits.max_text_chars, text_loop.max_tokens if text_loop else 1, card.sample_rate,
                              tuple(card.capabilities), SPEED_RANGE if engine.program.takes_speed else None,
                              engine.program.takes_instructions)
        self.worker = EngineWorker(engine, concurrency=options.concurrency, max_queue=options.max_queue,
                                   on_event=self._on_event, on_trace=self.metrics.on_trace)
        self.started = time.time()
        # OpenAI's default response_format is mp3: ours too wherever this libsndfile writes MP3
        self.default_format_reason = speech.can_write(self, "mp3")
        self.default_format = "mp3" if self.default_format_reason is None else "wav"

    def token_counts(self, units: dict[str, int]) -> tuple[int, int]:
        """(text tokens, codec tokens) in a request's WorkUnits per loop, from the loops the program counts."""
        return units.get(self._counted.get("text_tokens", ""), 0), units.get(self._counted.get("codec_tokens", ""), 0)

    def _on_event(self, ticket, item) -> None:
        endpoint = ticket.request_id.split("-")[0]
        if isinstance(item, RequestDone):
            self.metrics.on_done(endpoint, item.status.value, item.metrics)
        elif isinstance(item, BaseException):
            self.metrics.on_refused(endpoint, 400)

    def gauges(self) -> dict[str, tuple[str, float]]:
        budget = self.engine.budget
        return {
            "omni_requests_active": ("Requests accepted and not done (running or waiting).", self.worker.active),
            "omni_queue_depth": ("Accepted requests waiting for a slot.", self.worker.waiting),
            "omni_memory_budget_reserved_bytes": ("Engine memory budget in use.", budget.reserved),
            "omni_memory_budget_capacity_bytes": ("Engine memory budget.", budget.capacity),
            "omni_engine_up": ("1 while the engine thread and its workers run.", int(self.worker.failure() is None)),
        }


CLOSE = {"Connection": "close"}  # a body refused half-read: the rest is not read, so the connection ends


async def read_body(request: Request, options: ServeOptions, cap: int | None = None) -> bytes:
    """The body, refused with 413 as soon as it passes the cap (declared or streamed), and with 408 when it has
    not all arrived within `body_timeout_s` (a client that sends half a body and waits holds nothing for long)."""
    cap = cap or options.max_body_bytes
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > cap:
        raise ApiError(413, f"the request body is {declared} bytes, over the server's limit of {cap}",
                       code="request_too_large", headers=CLOSE)
    data = bytearray()
    try:
        with anyio.fail_after(options.body_timeout_s):
            async for piece in request.stream():
                data += piece
                if len(data) > cap:
                    raise ApiError(413, f"the request body is over the server's limit of {cap} bytes",
                                   code="request_too_large", headers=CLOSE)
    except TimeoutError:
        raise ApiError(408, f"the request body did not arrive within {options.body_timeout_s:g} s",
                       code="request_timeout", headers=CLOSE) from None
    except ClientDisconnect:  # nobody reads the answer; the log and /metrics see a client error, not ours
        raise ApiError(400, "the client closed the connection before its body arrived",
                       code="client_disconnected") from None
    return bytes(data)


def endpoint(ctx: ServeContext, name: str, fn):
    """A route whose every failure is an OpenAI-shaped error: ApiError as is, anything else a 500, no traceback."""
    async def handler(request: Request):
        try:
            return await fn(ctx, request)
        except ApiError as exc:
            ctx.metrics.on_refused(name, exc.status)
            return JSONResponse(exc.body(), exc.status, headers=exc.headers)
        except Exception as exc:  # a bug of ours: the client gets one line, the server log the traceback
            log.exception("internal error on %s", request.url.path)
            ctx.metrics.on_refused(name, 500)
            return JSONResponse(server_error(f"internal error: {type(exc).__name__}: {exc}").body(), 500)
    return handler


async def speech_route(ctx: ServeContext, request: Request):
    body = decode_body(speech_body, ctx.info, await read_body(request, ctx.options))
    if body.response_format is None:
        body = replace(body, response_format=ctx.default_format)
    reason = speech.can_write(ctx, body.response_format, body.sample_rate)
    if reason is not None:
        raise ApiError(400, f"response_format {body.response_format!r}: {reason}", param="response_format",
                       code="unsupported_value")
    ticket = ctx.worker.submit(body.request, "speech", body.sample_rate)
    return EngineResponse(ctx.worker, ticket, speech.produce(ctx, body, ticket))


async def chat_route(ctx: ServeContext, request: Request):
    raw = await read_body(request, ctx.options, ctx.options.max_chat_body_bytes)
    body = decode_body(chat.chat_body, ctx.info, raw)
    ticket = ctx.worker.submit(body.request, "chat")
    return EngineResponse(ctx.worker, ticket, chat.produce(ctx, body, ticket))


async def voices_route(ctx: ServeContext, request: Request):
    return JSONResponse({"object": "list", "model": ctx.info.names[0], "default": ctx.info.default_voice,
                         "voices": list(ctx.info.voices),
                         "data": [{"id": v, "object": "voice", "name": v} for v in ctx.info.voices]})


async def models_route(ctx: ServeContext, request: Request):
    card = ctx.card
    entry: dict[str, Any] = {"object": "model", "created": int(ctx.started), "owned_by": "omni_cli",
                             "description": card.description, "capabilities": list(card.capabilities),
                             "voices": list(ctx.info.voices), "sample_rate": card.sample_rate,
                             "max_input_chars": card.limits.max_text_chars,
                             "speed_range": list(ctx.info.speed_range) if ctx.info.speed_range else None,
                             "response_formats": [f for f in SPEECH_FORMATS
                                                  if speech.can_write(ctx, f) is None],
                             "stream_formats": [f for f in STREAMABLE if speech.can_write(ctx, f) is None],
                             "default_response_format": ctx.default_format}
    if ctx.default_format_reason is not None:
        entry["default_response_format_reason"] = f"not mp3 (OpenAI's default): {ctx.default_format_reason}"
    return JSONResponse({"object": "list", "data": [{"id": name, **entry} for name in ctx.info.names]})


async def health_route(ctx: ServeContext, request: Request):
    failure = ctx.worker.failure()  # the engine thread and every component's worker: a 503 sends traffic elsewhere
    budget = ctx.engine.budget
    return JSONResponse({"status": "ok" if failure is None else "unhealthy", "reason": failure,
                         "active": ctx.worker.active, "waiting": ctx.worker.waiting,
                         "budget_reserved_bytes": budget.reserved, "budget_capacity_bytes": budget.capacity},
                        200 if failure is None else 503)


async def metrics_route(ctx: ServeContext, request: Request):
    return PlainTextResponse(ctx.metrics.render(ctx.gauges()), media_type="text/plain; version=0.0.4")


class Gate:
    """ASGI middleware before any route: headers over the cap are a 431; with a key set, every path but
    /health needs `Authorization: Bearer KEY`."""

    def __init__(self, app, api_key: str | None, max_header_bytes: int):
        self.app = app
        self.max_header_bytes = max_header_bytes
        # compared as digests: equal length always, so the time taken says nothing about the key
        self.digest = hashlib.sha256(f"Bearer {api_key}".encode()).digest() if api_key else None

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http":
            # h11 caps only headers that arrive in pieces; this holds however they arrive
            size = sum(len(k) + len(v) + 4 for k, v in scope.get("headers", []))
            if size > self.max_header_bytes:
                error = ApiError(431, f"the request headers are {size} bytes, over the server's limit of "
                                      f"{self.max_header_bytes}", code="headers_too_large")
                return await JSONResponse(error.body(), 431)(scope, receive, send)
        if self.digest is not None and scope["type"] in ("http", "websocket") and scope["path"] != "/health":
            given = dict(scope.get("headers", [])).get(b"authorization", b"")
            if not hmac.compare_digest(hashlib.sha256(given).digest(), self.digest):
                if scope["type"] == "websocket":  # refused before the handshake: the client sees HTTP 403
                    return await send({"type": "websocket.close", "code": 1008})
                error = ApiError(401, "missing or wrong API key: send the header 'Authorization: Bearer KEY'",
                                 code="invalid_api_key", headers={"WWW-Authenticate": "Bearer"})
                return await JSONResponse(error.body(), 401, headers=error.headers)(scope, receive, send)
        await self.app(scope, receive, send)


async def _http_error(request: Request, exc: HTTPException):
    """Starlette's own 404/405 in OpenAI's shape."""
    code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code)
    message = f"{request.method} {request.url.path}: {exc.detail}"
    return JSONResponse(ApiError(exc.status_code, message, code=code).body(), exc.status_code, headers=exc.headers)


def create_app(engine: Engine, card_name: str, options: ServeOptions | None = None) -> tuple[Any, ServeContext]:
    """The ASGI app and its context; the engine thread starts with the app (lifespan) and stops with it."""
    ctx = ServeContext(engine, card_name, options or ServeOptions())
    routes = [
        Route("/v1/audio/speech", endpoint(ctx, "speech", speech_route), methods=["POST"]),
        WebSocketRoute("/v1/audio/speech/stream", lambda ws: speech_stream.session(ctx, ws)),
        Route("/v1/chat/completions", endpoint(ctx, "chat", chat_route), methods=["POST"]),
        Route("/v1/audio/voices", endpoint(ctx, "voices", voices_route), methods=["GET"]),
        Route("/v1/models", endpoint(ctx, "models", models_route), methods=["GET"]),
        Route("/health", endpoint(ctx, "health", health_route), methods=["GET"]),
        Route("/metrics", endpoint(ctx, "metrics", metrics_route), methods=["GET"]),
    ]

    from contextlib import asynccontextmanager

    @asynccontextmanager
    async def lifespan(app):
        ctx.worker.start()
        try:
            yield
        finally:
            ctx.worker.stop()

    app = Starlette(routes=routes, lifespan=lifespan, exception_handlers={HTTPException: _http_error})
    return Gate(app, ctx.options.api_key, ctx.options.max_header_bytes), ctx
