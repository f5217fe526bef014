"""Who may talk to a service the product runs (reward service, environment service), for how
long, and where it may listen.

:class:`AccessGuard` is a plain ASGI middleware (it passes ``receive`` through, so the
handlers see client disconnects): every HTTP request needs ``Authorization: Bearer
<token>`` when a token is set (compared in constant time; 401 otherwise; on the
``url_token_paths``, for clients that cannot send a header, ``?token=<token>`` in the URL
counts too), and a declared
``Content-Length`` over the limit gets 413 before the body is read. The body must arrive
within ``body_timeout_s`` of the headers (else 408 and the connection is closed), and a client
that disconnects before its body is read is one log line (``service.client_disconnected``),
not a traceback. uvicorn closes a kept-alive connection that stays idle
(``timeout_keep_alive``) but waits forever for the headers of a request that never finishes
them, so anyone who can connect (no token needed) could hold the service's file descriptors:
:func:`header_deadline_protocol` closes a connection whose headers are not complete
``header_timeout_s`` after it opened or after its last answer. :func:`check_exposure`
refuses to serve on an address other machines can reach without a token; :func:`serve` (in
the foreground) and :class:`BackgroundServer` (on a thread) run an app with uvicorn after that
check (the app says it has a token with ``app.state.token_required``, and its header deadline
with ``app.state.header_timeout_s``).
"""

from __future__ import annotations

import asyncio
import hmac
import ipaddress
import threading
import time
from collections.abc import Collection
from typing import Any
from urllib.parse import parse_qs

import structlog
from starlette.requests import ClientDisconnect
from starlette.responses import JSONResponse

log = structlog.get_logger(__name__)

HEADER_TIMEOUT_S = 10.0
"""Seconds a connection may take to send a request's headers."""
BODY_TIMEOUT_S = 30.0
"""Seconds a request may take to send its body (from when its headers arrived)."""
KEEP_ALIVE_S = 5
"""Seconds an idle kept-alive connection stays open (uvicorn's ``timeout_keep_alive``)."""


def header_deadline_protocol(header_timeout_s: float) -> type[asyncio.Protocol]:
    """uvicorn's HTTP protocol (httptools, else h11) closing connections whose headers are
    late (see the module docstring)."""
    from uvicorn.protocols.http.auto import AutoHTTPProtocol

    base: Any = AutoHTTPProtocol

    class HeaderDeadlineProtocol(base):  # type: ignore[misc,valid-type]
        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._arm_header_deadline(None)

        def on_response_complete(self) -> None:
            finished = self.cycle  # taken first: a pipelined request may start in super()
            super().on_response_complete()
            self._arm_header_deadline(finished)

        def _arm_header_deadline(self, waiting_for: Any) -> None:
            """Closes the connection unless a request other than ``waiting_for`` (the one
            answered last, None on a new connection) has its headers in time."""
            if not self.transport.is_closing():
                self.loop.call_later(header_timeout_s, self._headers_late, waiting_for)

        def _headers_late(self, waiting_for: Any) -> None:
            if self.cycle is waiting_for and not self.transport.is_closing():
                peer = self.transport.get_extra_info("peername")
                log.info(
                    "service.connection_closed",
                    reason=f"no complete request headers within {header_timeout_s}s",
                    peer=str(peer),
                )
                self.transport.close()

    return HeaderDeadlineProtocol


def uvicorn_config(app: Any, *, host: str, port: int, **options: Any) -> Any:
    """A ``uvicorn.Config`` for ``app`` with the deadlines it asks for
    (``app.state.header_timeout_s``, else :data:`HEADER_TIMEOUT_S`)."""
    import uvicorn

    header_timeout_s = float(getattr(app.state, "header_timeout_s", HEADER_TIMEOUT_S))
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level="warning",
        timeout_keep_alive=KEEP_ALIVE_S,
        http=header_deadline_protocol(header_timeout_s),
        **options,
    )


DEFAULT_HOST = "127.0.0.1"


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
    """ASGI middleware: token, declared size and body deadline (see the module docstring)."""

    def __init__(
        self,
        app: Any,
        *,
        token: str | None,
        max_request_bytes: int,
        body_timeout_s: float = BODY_TIMEOUT_S,
        url_token_paths: Collection[str] = (),
    ) -> None:
        self.app = app
        self.token = token
        self.url_token_paths = frozenset(url_token_paths)
        self.max_request_bytes = max_request_bytes
        self.body_timeout_s = body_timeout_s

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        if self.token is not None and not (
            authorized(headers.get("authorization", ""), self.token) or self._url_token(scope)
        ):
            response = JSONResponse({"detail": "missing or wrong bearer token"}, status_code=401)
            await response(scope, receive, send)
            return
        length = headers.get("content-length", "")
        if length.isdigit() and int(length) > self.max_request_bytes:
            detail = f"request body of {length} bytes exceeds {self.max_request_bytes}"
            await JSONResponse({"detail": detail}, status_code=413)(scope, receive, send)
            return
        await self._with_body_deadline(scope, receive, send)

    def _url_token(self, scope: Any) -> bool:
        """Whether the URL carries the token as ``?token=`` on a path that allows it."""
        if self.token is None or scope.get("path") not in self.url_token_paths:
            return False
        given = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("token", [""])
        return hmac.compare_digest(given[-1].encode(), self.token.encode())

    async def _with_body_deadline(self, scope: Any, receive: Any, send: Any) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.body_timeout_s
        state = {"body_read": False, "started": False}

        async def timed_receive() -> Any:
            if state["body_read"]:
                return await receive()
            try:
                message = await asyncio.wait_for(receive(), max(deadline - loop.time(), 0.0))
            except TimeoutError:
                raise _BodyTimeout from None
            if message["type"] == "http.request" and not message.get("more_body", False):
                state["body_read"] = True
            return message

        async def watched_send(message: Any) -> None:
            if message["type"] == "http.response.start":
                state["started"] = True
            await send(message)

        try:
            await self.app(scope, timed_receive, watched_send)
        except _BodyTimeout:
            log.info("service.body_timeout", path=scope.get("path"), seconds=self.body_timeout_s)
            if not state["started"]:
                detail = f"the request body did not arrive within {self.body_timeout_s}s"
                response = JSONResponse(
                    {"detail": detail}, status_code=408, headers={"Connection": "close"}
                )
                await response(scope, receive, send)
        except ClientDisconnect:
            log.info("service.client_disconnected", path=scope.get("path"), detail="mid-body")


class _BodyTimeout(Exception):
    """The request body did not arrive in time."""


def _check_exposure(app: Any, host: str) -> None:
    check_exposure(host, bool(getattr(app.state, "token_required", False)))


def serve(app: Any, *, host: str = DEFAULT_HOST, port: int = 8000) -> None:
    """Runs ``app`` in the foreground until interrupted (a non-loopback ``host`` needs an app
    with a token)."""
    _check_exposure(app, host)
    import uvicorn

    uvicorn.Server(uvicorn_config(app, host=host, port=port)).run()


class BackgroundServer:
    """Runs an app with uvicorn on a daemon thread; ``url`` once started (port 0: any free).

    Use as a context manager; leaving it shuts the server down.
    """

    def __init__(self, app: Any, *, host: str = DEFAULT_HOST, port: int = 0) -> None:
        import uvicorn

        _check_exposure(app, host)
        self._server = uvicorn.Server(uvicorn_config(app, host=host, port=port, lifespan="on"))
        self._thread = threading.Thread(target=self._server.run, daemon=True)
        self.url = ""

    def start(self, timeout_s: float = 30.0) -> str:
        """Starts the server; returns its base URL."""
        self._thread.start()
        deadline = time.monotonic() + timeout_s
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the service did not start")
            time.sleep(0.01)
        host, port = self._server.servers[0].sockets[0].getsockname()[:2]
        self.url = f"http://{host}:{port}"
        return self.url

    def stop(self) -> None:
        """Asks the server to exit and waits for it."""
        self._server.should_exit = True
        self._thread.join(timeout=10)

    def __enter__(self) -> BackgroundServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
