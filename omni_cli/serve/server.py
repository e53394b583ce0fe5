"""Run the app under uvicorn: in the foreground (`omni serve`), or on a background thread (tests, bench)."""

from __future__ import annotations

import socket
import threading
import time
from dataclasses import dataclass

import uvicorn

from ..engine import Engine
from .app import ServeContext, ServeOptions, create_app
from .connections import guarded_protocol

# a backstop: h11 stops buffering a header block past this; the app refuses anything over its own, smaller
# cap (ServeOptions.max_header_bytes) with an OpenAI-shaped 431
MAX_HEADER_BYTES = 64 << 10
SWITCH_INTERVAL_S = 0.0005


def uvicorn_config(app, host: str, port: int, options: ServeOptions, log_level: str = "warning") -> uvicorn.Config:
    # h11: the pure-Python parser, the one whose header size we can cap, with the header timeout and the
    # connection cap added (connections.py). Not uvicorn's limit_concurrency: past it /health is a 503 too.
    # WebSockets (text streamed in) through the `websockets` package, in the serve extra
    import importlib.util

    http = guarded_protocol(options.header_timeout_s, options.max_connections)
    ws = "websockets-sansio" if importlib.util.find_spec("websockets") else "none"
    return uvicorn.Config(app, host=host, port=port, http=http, ws=ws, ws_max_size=1 << 20, lifespan="on",
                          log_level=log_level,
                          access_log=False, h11_max_incomplete_event_size=MAX_HEADER_BYTES,
                          timeout_keep_alive=options.keep_alive_s, timeout_graceful_shutdown=5, server_header=False)


def bind(host: str, port: int) -> socket.socket:
    """A listening socket; port 0 takes a free one. Raises OSError (in use, no permission) with its reason."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # proto named: asyncio sets TCP_NODELAY only on IPPROTO_TCP sockets, and without it Nagle holds a
    # response's second write (its body after its headers) for the client's delayed ACK, 40 ms
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen(2048)
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


def serve_forever(engine: Engine, card_name: str, options: ServeOptions, sock: socket.socket,
                  log_level: str = "warning") -> None:
    """Serve on `sock` until SIGINT/SIGTERM (uvicorn's handlers: finish open responses, then stop)."""
    import sys

    # two busy threads share the GIL: the engine's and the event loop's. At the default 5 ms switch
    # interval a chunk ready on the engine thread can wait that long for the loop to send it
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    app, _ = create_app(engine, card_name, options)
    host, port = sock.getsockname()[:2]
    uvicorn.Server(uvicorn_config(app, host, port, options, log_level)).run(sockets=[sock])


@dataclass
class BackgroundServer:
    """A server on a thread of this process: `url`, its context (worker, engine, metrics), `stop()`."""

    url: str
    context: ServeContext
    server: uvicorn.Server
    thread: threading.Thread

    def stop(self, timeout_s: float = 10.0) -> None:
        self.server.should_exit = True
        self.thread.join(timeout_s)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def start_background(engine: Engine, card_name: str, options: ServeOptions | None = None,
                     host: str = "127.0.0.1", timeout_s: float = 30.0) -> BackgroundServer:
    """Start on a free loopback port and return once it accepts connections."""
    app, ctx = create_app(engine, card_name, options)
    sock = bind(host, 0)
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn_config(app, host, port, ctx.options))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name="omni-serve", daemon=True)
    thread.start()
    deadline = time.monotonic() + timeout_s
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            server.should_exit = True
            raise RuntimeError("the server did not start")
        time.sleep(0.01)
    return BackgroundServer(f"http://{host}:{port}", ctx, server, thread)
