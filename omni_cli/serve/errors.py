"""Errors in OpenAI's shape: `{"error": {"message", "type", "param", "code"}}` with an HTTP status."""

from __future__ import annotations

import json
from typing import Any


class ApiError(Exception):
    """A request the server answers with a 4xx/5xx and an OpenAI-shaped body, never a traceback."""

    def __init__(self, status: int, message: str, *, param: str | None = None, code: str | None = None,
                 type: str = "invalid_request_error", headers: dict[str, str] | None = None):
        super().__init__(message)
        self.status = status
        self.message = " ".join(message.split())  # one line, whatever the engine's text held
        self.param = param
        self.code = code
        self.type = type
        self.headers = headers or {}

    def body(self) -> dict[str, Any]:
        return {"error": {"message": self.message, "type": self.type, "param": self.param, "code": self.code}}

    def json_bytes(self) -> bytes:
        return json.dumps(self.body()).encode()


def bad_request(message: str, param: str | None = None, code: str | None = "invalid_value") -> ApiError:
    return ApiError(400, message, param=param, code=code)


def server_error(message: str) -> ApiError:
    return ApiError(500, message, type="server_error", code="request_failed")


def from_engine(exc: BaseException) -> ApiError:
    """What a refused `Engine.submit` means to a client: bad input or never fits, both 400."""
    from ..engine import AdmissionError
    from ..spec import SpecError

    if isinstance(exc, SpecError):
        param = exc.issues[0].key  # a SpecError carries at least one issue
        param = {"text": "input", "history": "messages"}.get(param, param)  # our field names in the client's words
        return bad_request("; ".join(i.message for i in exc.issues) or str(exc), param)
    if isinstance(exc, AdmissionError):
        return ApiError(400, str(exc), param="input", code="request_too_large")
    if isinstance(exc, ValueError):
        return bad_request(str(exc))
    return server_error(f"{type(exc).__name__}: {exc}")
