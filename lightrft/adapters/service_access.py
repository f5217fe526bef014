"""Who may talk to a service the product runs (reward service, environment service): the bearer token, and where it may listen.

:class:`AccessGuard` is a plain ASGI middleware (it leaves ``receive`` untouched, so the
handlers see client disconnects): every HTTP request needs ``Authorization: Bearer
<token>`` when a token is set (compared in constant time; 401 otherwise), and a declared
``Content-Length`` over the limit gets 413 before the body is read. :func:`check_exposure`
refuses to serve on an address other machines can reach without a token.
"""

from __future__ import annotations

import hmac
import ipaddress
from typing import Any

from starlette.responses import JSONResponse


class ServiceExposureError(ValueError):
    """Serving without a token where that is not allowed."""


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an address, or ``localhost``) is reachable from this machine only."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:  # a host name: it may resolve to any interface
        return False


def check_exposure(host: str, has_token: bool) -> None:
    """Raises unless there is a token or ``host`` is a loopback address."""
    if not has_token and not is_loopback(host):
        raise ServiceExposureError(
            f"refusing to serve on {host} without a bearer token: other machines can reach "
            "that address (set a token, or bind 127.0.0.1)"
        )


def authorized(header: str, token: str) -> bool:
    """Whether an ``Authorization`` header value carries ``token`` as a bearer token."""
    scheme, _, given = header.partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(given.encode(), token.encode())


class AccessGuard:
    """ASGI middleware: token check and declared-size check (see the module docstring)."""

    def __init__(self, app: Any, *, token: str | None, max_request_bytes: int) -> None:
        self.app = app
        self.token = token
        self.max_request_bytes = max_request_bytes

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        if self.token is not None and not authorized(headers.get("authorization", ""), self.token):
            response = JSONResponse({"detail": "missing or wrong bearer token"}, status_code=401)
            await response(scope, receive, send)
            return
        length = headers.get("content-length", "")
        if length.isdigit() and int(length) > self.max_request_bytes:
            detail = f"request body of {length} bytes exceeds {self.max_request_bytes}"
            await JSONResponse({"detail": detail}, status_code=413)(scope, receive, send)
            return
        await self.app(scope, receive, send)
