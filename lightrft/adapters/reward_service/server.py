"""The HTTP reward service: any ``RewardSource`` behind FastAPI, run by uvicorn.

``create_app(source)`` builds the app: ``POST /score`` (micro-batched across concurrent
requests, :mod:`~lightrft.adapters.reward_service.batcher`) and ``GET /health``. With a
``token`` every request must carry ``Authorization: Bearer <token>`` (compared in constant
time), else 401. A body larger than ``max_request_bytes`` is refused with 413 before it is
parsed, a request with more than ``max_batch`` samples with 413 too; a malformed body gets
422 naming the field; a source that raises gets 500 with the error message.
``BackgroundServer`` runs an app on a thread (tests, in-process serving); ``serve`` runs it
in the foreground. The default host is 127.0.0.1: expose it on purpose, with a token.
"""

from __future__ import annotations

import hmac
import threading
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import structlog
import uvicorn
from fastapi import FastAPI, HTTPException, Request
from fastapi.responses import JSONResponse
from pydantic import ValidationError

from lightrft.adapters.reward_service.batcher import MicroBatcher
from lightrft.adapters.reward_service.protocol import ScoreRequest, ScoreResponse
from lightrft.domain.ports import RewardSource

log = structlog.get_logger(__name__)

DEFAULT_HOST = "127.0.0.1"


def create_app(
    source: RewardSource,
    *,
    token: str | None = None,
    max_batch: int = 1024,
    max_request_bytes: int = 8 * 2**20,
    micro_batch_samples: int = 64,
    batch_window_s: float = 0.005,
) -> FastAPI:
    """The FastAPI app serving ``source`` (see the module docstring)."""
    batcher = MicroBatcher(source.score, max_samples=micro_batch_samples, window_s=batch_window_s)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        source.onload()
        batcher.start()
        log.info("reward_service.start", source=source.name)
        yield
        await batcher.stop()

    app = FastAPI(title="LightRFT reward service", lifespan=lifespan)
    app.state.batcher = batcher

    @app.middleware("http")
    async def guard(request: Request, call_next: Any) -> Any:
        if token is not None and not _authorized(request, token):
            return JSONResponse({"detail": "missing or wrong bearer token"}, status_code=401)
        length = request.headers.get("content-length")
        if length is not None and length.isdigit() and int(length) > max_request_bytes:
            return _too_large(f"request body of {length} bytes exceeds {max_request_bytes}")
        return await call_next(request)

    @app.get("/health")
    async def health() -> dict[str, Any]:
        return {"status": "ok", "source": source.name}

    @app.post("/score")
    async def score(request: Request) -> ScoreResponse:
        body = await request.body()
        if len(body) > max_request_bytes:
            raise HTTPException(
                413, f"request body of {len(body)} bytes exceeds {max_request_bytes}"
            )
        try:
            parsed = ScoreRequest.model_validate_json(body)
        except ValidationError as error:
            raise HTTPException(422, _first_error(error)) from None
        if len(parsed.samples) > max_batch:
            raise HTTPException(
                413, f"{len(parsed.samples)} samples exceed the limit of {max_batch}"
            )
        started = time.perf_counter()
        try:
            scores, metrics = await batcher.submit([s.to_sample() for s in parsed.samples])
        except Exception as error:  # noqa: BLE001 - reported to the client
            raise HTTPException(500, f"reward source {source.name!r} failed: {error}") from None
        log.debug(
            "reward_service.scored", samples=len(scores), seconds=time.perf_counter() - started
        )
        return ScoreResponse(scores=scores, metrics=metrics)

    return app


def _authorized(request: Request, token: str) -> bool:
    header = request.headers.get("authorization", "")
    scheme, _, given = header.partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(given.encode(), token.encode())


def _too_large(message: str) -> JSONResponse:
    return JSONResponse({"detail": message}, status_code=413)


def _first_error(error: ValidationError) -> str:
    first = error.errors()[0]
    where = ".".join(str(part) for part in first.get("loc", ()))
    return f"invalid request at {where or 'body'}: {first.get('msg', 'invalid')}"


def serve(app: FastAPI, *, host: str = DEFAULT_HOST, port: int = 8000) -> None:
    """Runs ``app`` in the foreground until interrupted."""
    uvicorn.run(app, host=host, port=port, log_level="warning")


class BackgroundServer:
    """Runs an app with uvicorn on a daemon thread; ``url`` once started (port 0: any free).

    Use as a context manager; leaving it shuts the server down.
    """

    def __init__(self, app: FastAPI, *, host: str = DEFAULT_HOST, port: int = 0) -> None:
        config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, daemon=True)
        self.url = ""

    def start(self, timeout_s: float = 30.0) -> str:
        """Starts the server; returns its base URL."""
        self._thread.start()
        deadline = time.monotonic() + timeout_s
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the reward service did not start")
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


__all__ = ["BackgroundServer", "DEFAULT_HOST", "create_app", "serve"]
