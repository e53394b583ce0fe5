"""`omni serve`: load one engine and answer the OpenAI speech API over HTTP until interrupted."""

from __future__ import annotations

from typing import Annotated

import typer

from ..defaults import DEFAULT_CARD
from . import options as o

HELP = """Serve the OpenAI speech API on one engine shared by every client.

The same card as `omni speak` unless --card (or OMNI_CARD) names another;
the first line on stderr names the card, its voices and the address.

\b
Routes: POST /v1/audio/speech (mp3 by default, as OpenAI's; wav, pcm, flac,
opus, aac; "stream_format": "audio" streams the bytes of any of them as they
are made, "sse" or "stream": true sends speech.audio.delta events), WebSocket
/v1/audio/speech/stream (text in piece by piece, each sentence or clause
spoken once complete), POST /v1/chat/completions (modalities text and
audio), GET /v1/audio/voices, /v1/models, /health, /metrics.
Requests from all clients run interleaved and batched; a client that
disconnects cancels its request. Past --concurrency running and --max-queue
waiting, a request gets 429 with Retry-After. Binds 127.0.0.1 unless --host
says otherwise; with --api-key every route but /health needs the header
`Authorization: Bearer KEY`. A client that sends half a request and
waits is cut off (--header-timeout, --body-timeout); /health is 503,
with the reason, once a component's worker process (--placement) dies.
Before it listens it makes one utterance
nobody hears, so the first client's chunks are not the process's first
(slower) ones; --no-warm-up skips it.
"""


def serve(
    card: o.Card = DEFAULT_CARD, program: o.Program = None, policy: o.Policy_ = o.Policy.latency_first,
    model_path: o.ModelPath = None, dtype: o.Dtype = None, device: o.Device = None, set_: o.Set = None,
    placement: o.Placement = None,
    host: Annotated[str, typer.Option("--host", help="Address to bind; 0.0.0.0 exposes it to the network.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=0, max=65535, help="TCP port (0: a free one).")] = 8000,
    api_key: Annotated[str | None, typer.Option("--api-key", envvar="OMNI_API_KEY", metavar="KEY",
                                                   help="Require `Authorization: Bearer KEY` (env OMNI_API_KEY).")] = None,
    concurrency: Annotated[int, typer.Option("--concurrency", "-j", min=1, max=1024,
                                             help="Requests in the engine at once.")] = 8,
    max_queue: Annotated[int, typer.Option("--max-queue", min=0, max=100_000,
                                           help="Requests waiting beyond those; more get 429.")] = 64,
    warm_up: Annotated[bool, typer.Option("--warm-up/--no-warm-up",
                                          help="Make one utterance, unheard, before listening: a fresh "
                                               "process's first chunks of each size are slower.")] = True,
    header_timeout: Annotated[float, typer.Option("--header-timeout", min=0.1, max=3600, metavar="SECONDS",
                                                  help="Close a connection whose request headers have not all "
                                                       "arrived in this time.")] = 10.0,
    body_timeout: Annotated[float, typer.Option("--body-timeout", min=0.1, max=3600, metavar="SECONDS",
                                                help="Answer 408 to a request whose body has not all arrived "
                                                     "in this time.")] = 30.0,
    keep_alive: Annotated[float, typer.Option("--keep-alive", min=0.1, max=3600, metavar="SECONDS",
                                              help="Close a connection idle between requests after this.")] = 5.0,
    max_connections: Annotated[int, typer.Option("--max-connections", min=1, max=100_000,
                                                 help="Open connections; past it the oldest one still waiting "
                                                      "for its headers is closed.")] = 512,
    ws_idle_timeout: Annotated[float, typer.Option("--ws-idle-timeout", min=0.1, max=86400, metavar="SECONDS",
                                                   help="Close a /v1/audio/speech/stream socket that sends nothing "
                                                        "this long while nothing is left to send.")] = 30.0,
) -> None:
    import sys

    from .errors import CliError

    try:
        from ..serve.app import ServeOptions
        from ..serve.server import bind, serve_forever
    except ImportError as exc:
        from ..extras import install_command

        raise CliError(f"omni serve needs its extra: {install_command('serve')} ({exc})", 1) from None
    from .session import ModelOptions

    on_terminal = sys.stderr.isatty()
    engine = _load(ModelOptions(card, program, policy.value, {"model_path": model_path, "dtype": dtype,
                                                             "device": device}, placement=placement,
                                overrides=o.overrides(set_)), on_terminal)
    try:
        sock = bind(host, port)
    except OSError as exc:
        raise CliError(f"cannot listen on {host}:{port}: {exc.strerror or exc}", 1) from None
    warmed = _warm_up(engine, on_terminal) if warm_up else ""
    _say_listening(engine, card, host, sock.getsockname()[1], f"concurrency {concurrency}, max queue {max_queue}"
                   f"{', API key required' if api_key else ''}{warmed}")
    options = ServeOptions(api_key, concurrency, max_queue, header_timeout_s=header_timeout,
                           body_timeout_s=body_timeout, keep_alive_s=keep_alive, max_connections=max_connections,
                           ws_idle_timeout_s=ws_idle_timeout)
    serve_forever(engine, card, options, sock)


def _say_listening(engine, card: str, host: str, port: int, settings: str) -> None:
    """The server's first line: what it serves, where, and how."""
    import sys

    voices = ", ".join(engine.program.voices()) or "none"
    sys.stderr.write(f"omni serve: {card} on http://{host if ':' not in host else f'[{host}]'}:{port} "
                     f"(voices: {voices}; {settings}); Ctrl-C stops\n")
    sys.stderr.flush()


def _load(options, on_terminal: bool):
    """The engine, its load's phases on one redrawn line on a terminal (gone once loaded: seconds to minutes
    for a real checkpoint); a pipe gets nothing before the address line, the first line a script reads."""
    import signal
    import sys

    from .load_view import LiveLoadView, LoadView
    from .session import open_engine

    if on_terminal:  # Ctrl-C during the load or the warm-up takes their lines back (the start-up's handler
        signal.signal(signal.SIGINT, signal.default_int_handler)  # ends the process where it stands)
    with LiveLoadView(sys.stderr) if on_terminal else LoadView() as on_load:
        return open_engine(options, on_load)


def _warm_up(engine, on_terminal: bool) -> str:
    """One utterance nobody hears, before the server listens; what the address line then says of it."""
    import sys

    from ..engine.scheduler import one_line

    # a terminal sees what the wait is; the note, shorter than 80 columns so that one carriage return takes
    # it back, is overwritten by the address line, and a pipe never gets it: its first line is the address
    if on_terminal:
        sys.stderr.write("omni serve: warming up (one utterance nobody hears)...")
        sys.stderr.flush()
    try:
        return f", warmed up in {engine.warm_up():.1f} s"
    except Exception as exc:  # noqa: BLE001 - the clients' requests will say what is wrong, one by one
        return f", warm-up failed: {one_line(exc)}"
    finally:  # Ctrl-C too: the shell's prompt comes back on a clean line
        if on_terminal:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()
