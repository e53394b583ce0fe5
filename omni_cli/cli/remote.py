"""`omni speak --server URL`: the speak run driven by a running `omni serve` instead of an engine of its own.

A RemoteEngine stands where the engine stands for the runner: `submit` posts one utterance to
/v1/audio/speech (Server-Sent Events of 16-bit PCM, which carry the usage at the end and an error mid-way)
and a thread per request turns the events into the engine's own stream events. So the outputs (a WAV valid
after every chunk, `-o -`, `--format raw`, a directory), the ordering, the signals and the exit codes are
the local run's. Only the standard library talks HTTP here: a client needs no extra.
"""

from __future__ import annotations

import base64
import http.client
import itertools
import json
import queue
import socket
import threading
import urllib.parse
from typing import Any

import numpy as np

from ..spec import SpecError
from ..spec.errors import SpecIssue
from ..spec.stream import AudioChunk, RequestDone, RequestStatus
from .errors import FAILURE, CliError

CONNECT_TIMEOUT_S = 10.0
_BAD_INPUT = (400, 404, 413, 422)  # the server's word for bad input: exit 2, as the same input locally


class Server:
    """Where the server is, and how to ask it (an API key from OMNI_API_KEY, sent as a Bearer token)."""

    def __init__(self, url: str, api_key: str | None = None) -> None:
        parts = urllib.parse.urlsplit(url if "://" in url else "http://" + url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise CliError(f"--server {url}: not an http(s) URL (e.g. http://127.0.0.1:8000)")
        self.url = f"{parts.scheme}://{parts.netloc}"
        self.host, self.https = parts.hostname, parts.scheme == "https"
        try:
            self.port = parts.port or (443 if self.https else 80)
        except ValueError:
            raise CliError(f"--server {url}: the port is not a number") from None
        self.headers = {"Content-Type": "application/json"}
        if api_key:
            self.headers["Authorization"] = f"Bearer {api_key}"

    def connect(self) -> http.client.HTTPConnection:
        kind = http.client.HTTPSConnection if self.https else http.client.HTTPConnection
        return kind(self.host, self.port, timeout=CONNECT_TIMEOUT_S)

    def request(self, method: str, path: str, body: dict | None = None):
        """(connection, response) once the status line and headers are in; a server that is down is a CliError."""
        conn = self.connect()
        try:
            conn.request(method, path, None if body is None else json.dumps(body).encode(), self.headers)
            response = conn.getresponse()
        except (OSError, http.client.HTTPException) as exc:
            conn.close()
            reason = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
            raise CliError(f"cannot reach omni serve at {self.url}: {reason}", FAILURE) from None
        if conn.sock is not None:
            conn.sock.settimeout(None)  # a long utterance may take a while between chunks; cancel closes it
        return conn, response

    def get_json(self, path: str) -> dict[str, Any]:
        conn, response = self.request("GET", path)
        try:
            data = response.read()
        finally:
            conn.close()
        if response.status != 200:
            raise CliError(f"omni serve at {self.url} refused GET {path}: {error_message(response.status, data)}",
                           FAILURE)
        try:
            return json.loads(data)
        except ValueError:
            raise CliError(f"{self.url} is not an omni server (GET {path} did not answer JSON)", FAILURE) from None


def error_message(status: int, data: bytes) -> str:
    """The message of an OpenAI-shaped error body, or the HTTP status when there is none."""
    try:
        return f"HTTP {status}: {json.loads(data)['error']['message']}"
    except (ValueError, KeyError, TypeError):
        return f"HTTP {status}"


class _Card:
    def __init__(self, model: dict[str, Any]) -> None:
        self.model = model["id"]
        self.limits = type("Limits", (), {"max_text_chars": int(model.get("max_input_chars") or 2000)})()


class RemoteProgram:
    """The served model's facts the runner reads: no loops to show, its voices, its text limit."""

    def __init__(self, model: dict[str, Any]) -> None:
        self.loops: dict[str, Any] = {}
        self.card = _Card(model)
        self.voices = tuple(model.get("voices") or ())

    def resolve_voice(self, voice: str | None) -> str | None:
        if voice is not None and voice not in self.voices:
            known = ", ".join(self.voices) or "none"
            raise SpecError([SpecIssue("<request>", None, "voice", f"unknown voice {voice!r} (the server's: {known})")])
        return voice


class RemoteEngine:
    """The runner's engine, backed by a server: each submitted request streams on its own thread."""

    def __init__(self, server: Server) -> None:
        self.server = server
        models = server.get_json("/v1/models").get("data") or []
        if not models or not isinstance(models[0], dict) or "sample_rate" not in models[0]:
            raise CliError(f"{server.url} is not an omni server (its /v1/models names no sample rate)", FAILURE)
        self.model = models[0]
        self.names = [m.get("id") for m in models if isinstance(m, dict)]
        self.program = RemoteProgram(self.model)
        self.sample_rate = int(self.model["sample_rate"])
        self._events: queue.SimpleQueue = queue.SimpleQueue()
        self._open: dict[str, tuple[http.client.HTTPConnection, threading.Thread]] = {}
        self._cancelled: set[str] = set()
        self._ids = itertools.count(1)

    # what the runner calls
    def subscribe(self, fn) -> None:
        """No trace events come from a server."""

    @property
    def is_idle(self) -> bool:
        return not self._open

    @property
    def num_active(self) -> int:
        return len(self._open)

    def submit(self, request) -> Any:
        """Post the utterance; return once the server took it. Bad input is a SpecError, as locally."""
        body = {"model": self.model["id"], "input": request.text, "response_format": "pcm", "stream": True,
                "seed": request.seed}
        for key in ("voice", "max_tokens", "mode"):
            if getattr(request, key) is not None:
                body[key] = getattr(request, key)
        if request.speed not in (None, 1.0):
            body["speed"] = request.speed
        conn, response = self.server.request("POST", "/v1/audio/speech", body)
        if response.status != 200:
            data = response.read()
            conn.close()
            message = error_message(response.status, data)
            if response.status in _BAD_INPUT:
                raise SpecError([SpecIssue("<server>", None, "", message)])
            raise CliError(f"omni serve at {self.server.url} refused the request: {message}", FAILURE)
        rid = f"remote-{next(self._ids)}"
        thread = threading.Thread(target=self._read, args=(rid, conn, response), name=f"omni-{rid}", daemon=True)
        self._open[rid] = (conn, thread)
        thread.start()
        return type("Handle", (), {"request_id": rid})()

    def events(self):
        """What the streams received so far, waiting a moment for more (the runner feeds lines between calls)."""
        while self._open:
            try:
                event = self._events.get(timeout=0.05)
            except queue.Empty:
                return
            if isinstance(event, RequestDone):
                self._open.pop(event.request_id, (None, None))[1].join()
            yield event

    def cancel_all(self) -> None:
        """Close every stream (the server cancels a request whose client went away); their ends still come."""
        for rid, (conn, _) in list(self._open.items()):
            self._cancelled.add(rid)
            try:
                if conn.sock is not None:
                    conn.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def close(self) -> None:
        self.cancel_all()
        for _, thread in list(self._open.values()):
            thread.join(5.0)

    # a request's thread
    def _read(self, rid: str, conn: http.client.HTTPConnection, response) -> None:
        put = self._events.put
        index, carry = 0, b""
        try:
            for line in response:
                if not line.startswith(b"data: "):
                    continue
                event = json.loads(line[6:])
                kind = event.get("type")
                if kind == "speech.audio.delta":
                    pcm = carry + base64.b64decode(event["audio"])
                    whole = len(pcm) - len(pcm) % 2  # a sample may straddle two deltas
                    pcm, carry = pcm[:whole], pcm[whole:]
                    samples = np.frombuffer(pcm, "<i2").astype(np.float32) / 32767  # float_to_pcm16 gives them back
                    put(AudioChunk(rid, index, self.sample_rate, samples))
                    index += 1
                elif kind == "speech.audio.done":
                    metrics = dict((event.get("usage") or {}).get("omni") or {})
                    return put(RequestDone(rid, RequestStatus.FINISHED, None, metrics))
                elif kind == "error":
                    return put(RequestDone(rid, RequestStatus.FAILED, (event.get("error") or {}).get("message")))
            self._end(rid, "the server closed the stream before the end")
        except (OSError, ValueError, KeyError, http.client.HTTPException) as exc:
            self._end(rid, f"lost omni serve at {self.server.url}: {exc}")
        finally:
            conn.close()

    def _end(self, rid: str, error: str) -> None:
        if rid in self._cancelled:
            self._events.put(RequestDone(rid, RequestStatus.CANCELLED, None))
        else:
            self._events.put(RequestDone(rid, RequestStatus.FAILED, error))


LOCAL_ONLY = {"program": "--program", "placement": "--placement", "ray_address": "--ray-address",
              "trace": "--trace", "handoff": "--handoff"}


def refuse_local_options(given: dict[str, Any]) -> None:
    """Options that build or watch an engine mean nothing to a server's: said, exit 2."""
    named = [LOCAL_ONLY.get(k, "--" + k.replace("_", "-")) for k, v in given.items() if v not in (None, False, 1, {})]
    if named:
        raise CliError(f"{', '.join(named)}: not with --server (the server's engine is built already; "
                       "start `omni serve` with them instead)")


def run_remote(job, url: str, card: str, api_key: str | None):
    """The speak run on a server: the local run's outputs, view and exit codes (see job.py). `card`, when
    not the default, must be a name the server serves."""
    from ..defaults import DEFAULT_CARD
    from .job import _run_on
    from .outputs import claim_plan

    claim_plan(job.plan, None)  # an output it may not write is refused before the server is asked anything
    engine = RemoteEngine(Server(url, api_key))
    if card != DEFAULT_CARD and card not in engine.names:
        engine.close()
        raise CliError(f"--card {card}: the server at {engine.server.url} serves {', '.join(engine.names)}")
    try:
        return _run_on(engine, job, None)
    finally:
        engine.close()
