"""An ASGI response that produces its body from an engine request while watching for the client leaving.

Starlette's StreamingResponse notices a disconnect only when a send fails (ASGI spec 2.4), which
for a request still waiting for its first audio may be seconds later. Here a watcher task reads
`http.disconnect` the moment it arrives and cancels the producer; the producer's `finally` then
cancels the engine request, which stops at its next step boundary and refunds its memory.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import anyio

from .errors import ApiError
from .worker import EngineWorker, Ticket

Send = Callable[[dict[str, Any]], Awaitable[None]]


class EngineResponse:
    """Runs `produce(send)` for `ticket`; the client leaving, or any end before done, cancels the request."""

    def __init__(self, worker: EngineWorker, ticket: Ticket, produce: Callable[[Send], Awaitable[None]]):
        self.worker = worker
        self.ticket = ticket
        self.produce = produce

    async def __call__(self, scope, receive, send) -> None:
        try:
            async with anyio.create_task_group() as tasks:
                async def watch() -> None:
                    while (await receive())["type"] != "http.disconnect":
                        pass
                    tasks.cancel_scope.cancel()

                tasks.start_soon(watch)
                try:
                    await self.produce(send)
                except OSError:  # the socket went away under a send: the same as a disconnect
                    pass
                finally:
                    tasks.cancel_scope.cancel()
        finally:
            self.worker.cancel(self.ticket)  # a no-op once the request is done


async def send_start(send: Send, status: int, content_type: str, headers: dict[str, str] | None = None,
                     length: int | None = None) -> None:
    raw = [(b"content-type", content_type.encode())]
    if length is not None:
        raw.append((b"content-length", str(length).encode()))
    raw += [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})


async def send_body(send: Send, data: bytes, more: bool = True) -> None:
    await send({"type": "http.response.body", "body": data, "more_body": more})


async def send_whole(send: Send, status: int, content_type: str, data: bytes,
                     headers: dict[str, str] | None = None) -> None:
    await send_start(send, status, content_type, headers, len(data))
    await send_body(send, data, more=False)


async def send_error(send: Send, error: ApiError, headers: dict[str, str] | None = None) -> None:
    await send_whole(send, error.status, "application/json", error.json_bytes(), {**error.headers, **(headers or {})})


async def encoded(encoder, samples) -> AsyncIterator[bytes]:
    """One chunk's bytes as `encoder` makes them. A slow codec (MP3, Opus) runs on a worker thread, where
    libsndfile releases the GIL, so it holds neither the event loop nor other clients; and in slices, so its
    first bytes go out before the whole chunk is encoded."""
    if not encoder.is_slow:
        data = encoder.encode(samples)
        if data:
            yield data
        return
    for part in encoder.slices(samples):
        data = await anyio.to_thread.run_sync(encoder.encode, part)
        if data:
            yield data


async def finished(encoder) -> bytes:
    """The encoder's last bytes (off the event loop for a slow codec)."""
    if not encoder.is_slow:
        return encoder.finish()
    return await anyio.to_thread.run_sync(encoder.finish)


def sse(payload: dict[str, Any] | str) -> bytes:
    """One Server-Sent Event carrying `payload` (JSON, or a bare string such as [DONE])."""
    text = payload if isinstance(payload, str) else json.dumps(payload, separators=(",", ":"))
    return f"data: {text}\n\n".encode()
