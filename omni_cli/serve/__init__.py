"""`omni serve`: the OpenAI speech API (and chat with audio) on one engine shared by every HTTP client.

Needs the `serve` extra (starlette, uvicorn); nothing else in the package imports this one.
"""

from .app import ServeContext, ServeOptions, create_app

__all__ = ["ServeContext", "ServeOptions", "create_app"]
