"""The rollout gateway's HTTP front end: an OpenAI-compatible endpoint on loopback.

Routes (every one needs ``Authorization: Bearer <episode token>``, else 401):

- ``GET /v1/models``: the policy's model name;
- ``POST /v1/chat/completions``: :mod:`~lightrft.adapters.gateway.openai_wire` requests,
  answered by the backend (400 a bad request, 429 over ``max_calls``, 504 past the call's
  deadline);
- ``POST /v1/episodes/reward`` ``{"reward": number}``: the episode's reward.

Bodies are limited in size and time by the services' guard
(:mod:`lightrft.adapters.service_access`); the backend's blocking calls run on a thread pool
large enough for every episode of a rollout to wait on one call at once.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import AsyncIterator
from typing import Any

from lightrft.adapters.gateway.openai_wire import WireError, chat_reply, chat_request, error_body
from lightrft.adapters.service_access import AccessGuard, BackgroundServer
from lightrft.domain.gateway_calls import (
    GatewayAuthError,
    GatewayBackend,
    GatewayCallTimeoutError,
    GatewayLimitError,
)

MAX_REQUEST_BYTES = 8 << 20
WORKER_THREADS = 512  # calls waiting at once (each holds a thread until sampled)


def create_gateway_app(
    backend: GatewayBackend, *, max_request_bytes: int = MAX_REQUEST_BYTES
) -> Any:
    """The Starlette app serving ``backend`` (see the module docstring)."""
    from starlette.applications import Starlette
    from starlette.concurrency import run_in_threadpool
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    def fail(status: int, message: str, kind: str) -> JSONResponse:
        return JSONResponse(error_body(message, kind), status_code=status)

    def token_of(request: Request) -> str:
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        return token.strip() if scheme.lower() == "bearer" else ""

    async def guarded(request: Request, work: Any) -> JSONResponse:
        try:
            return JSONResponse(await run_in_threadpool(work, token_of(request)))
        except GatewayAuthError as error:
            return fail(401, str(error), "authentication_error")
        except GatewayCallTimeoutError as error:
            return fail(504, str(error), "timeout")
        except GatewayLimitError as error:
            return fail(error.status, str(error), "limit_exceeded")
        except WireError as error:
            return fail(400, str(error), "invalid_request_error")

    async def body_of(request: Request) -> Any:
        try:
            return await request.json()
        except ValueError:
            return None  # refused by the request's checks, naming what was expected

    async def models(request: Request) -> JSONResponse:
        def answer(token: str) -> dict[str, Any]:
            backend.check_token(token)
            model = {"id": backend.model_name, "object": "model", "owned_by": "lightrft"}
            return {"object": "list", "data": [model]}

        return await guarded(request, answer)

    async def completions(request: Request) -> JSONResponse:
        body = await body_of(request)

        def answer(token: str) -> dict[str, Any]:
            backend.check_token(token)
            return chat_reply(backend.complete(token, chat_request(body)))

        return await guarded(request, answer)

    async def reward(request: Request) -> JSONResponse:
        body = await body_of(request)

        def answer(token: str) -> dict[str, Any]:
            backend.check_token(token)
            value = body.get("reward") if isinstance(body, dict) else None
            if (
                not isinstance(value, int | float)
                or isinstance(value, bool)
                or not math.isfinite(value)
            ):
                raise WireError('the body must be {"reward": <finite number>}')
            backend.report_reward(token, float(value))
            return {"ok": True}

        return await guarded(request, answer)

    @contextlib.asynccontextmanager
    async def more_threads(app: Any) -> AsyncIterator[None]:
        import anyio.to_thread

        anyio.to_thread.current_default_thread_limiter().total_tokens = WORKER_THREADS
        yield

    app = Starlette(
        routes=[
            Route("/v1/models", models, methods=["GET"]),
            Route("/v1/chat/completions", completions, methods=["POST"]),
            Route("/v1/episodes/reward", reward, methods=["POST"]),
        ],
        lifespan=more_threads,
    )
    app.add_middleware(AccessGuard, token=None, max_request_bytes=max_request_bytes)
    return app


def start_gateway(backend: GatewayBackend) -> str:
    """Serves ``backend`` on 127.0.0.1 (a free port) on a daemon thread; its base URL."""
    return BackgroundServer(create_gateway_app(backend), host="127.0.0.1", port=0).start()
