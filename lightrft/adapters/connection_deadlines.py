"""Deadlines on the connections of the services the product runs (reward, environment).

uvicorn closes a kept-alive connection that stays idle (``timeout_keep_alive``) but waits
forever for the headers of a request that never finishes them, so anyone who can connect
(no token needed) could hold the service's file descriptors. :func:`header_deadline_protocol`
is uvicorn's HTTP protocol with a deadline: a connection whose request headers are not
complete ``header_timeout_s`` after it opened (or after its last response) is closed, with one
log line. The body has its own deadline, kept by
:class:`~lightrft.adapters.service_access.AccessGuard`.
"""

from __future__ import annotations

import asyncio
from typing import Any

import structlog

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
            self._arm_header_deadline()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._arm_header_deadline()

        def _arm_header_deadline(self) -> None:
            if self.transport.is_closing():
                return
            waiting_for = self.cycle  # a new request's headers replace it
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
