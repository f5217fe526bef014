"""The server side of the environment protocol: any environment factory behind HTTP.

``EnvironmentService(factory)`` keeps one environment per episode id and answers the JSON
requests of :mod:`~lightrft.adapters.agents.http_wire` (``handle(verb, body)``, usable
in-process, e.g. behind ``httpx.MockTransport`` in tests); ``create_app(service)`` is the
Starlette app to serve it, with ``serve(app, host=..., port=...)`` (foreground) or
``BackgroundServer(app)`` (a thread), the reward service's runners: both refuse a host other
machines can reach unless the app has a token (:func:`~lightrft.adapters.service_access.check_exposure`). Steps are idempotent per ``(episode, turn)``: a
retried request gets the stored answer. Unknown episodes and malformed bodies are HTTP 4xx
with a ``detail``; an environment that raises is HTTP 500 (the client retries, then counts).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from lightrft.adapters.agents.http_wire import (
    action_from_wire,
    outcome_to_wire,
    prompt_from_wire,
    prompt_to_wire,
)
from lightrft.adapters.service_access import BODY_TIMEOUT_S, HEADER_TIMEOUT_S
from lightrft.domain.agent import Environment, EnvironmentFactory


class ServiceError(Exception):
    """An answer other than 200: ``status`` and ``detail``."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(detail)
        self.status, self.detail = status, detail


class EnvironmentService:
    """Episodes of ``factory``'s environments by id (see the module docstring)."""

    def __init__(self, factory: EnvironmentFactory, max_episodes: int = 10_000) -> None:
        self.factory, self.max_episodes = factory, max_episodes
        self._episodes: dict[str, tuple[Environment, dict[int, dict[str, Any]]]] = {}
        self._lock = threading.Lock()

    def handle(self, verb: str, body: Any) -> dict[str, Any]:
        """The answer to ``POST /<verb>`` with JSON ``body``; raises ServiceError."""
        if not isinstance(body, dict) or not isinstance(body.get("episode"), str):
            raise ServiceError(422, "the body must be an object with a string 'episode'")
        episode = body["episode"]
        if verb == "reset":
            return self._reset(episode, body)
        if verb == "step":
            return self._step(episode, body)
        if verb == "close":
            with self._lock:
                entry = self._episodes.pop(episode, None)
            if entry is not None:
                entry[0].close()
            return {}
        raise ServiceError(404, f"unknown verb {verb!r}; verbs: reset, step, close")

    def _reset(self, episode: str, body: Mapping[str, Any]) -> dict[str, Any]:
        try:
            prompt = prompt_from_wire(body["prompt"])
        except (KeyError, TypeError, ValueError) as error:
            raise ServiceError(422, f"bad prompt: {error!r}") from None
        with self._lock:
            if episode not in self._episodes and len(self._episodes) >= self.max_episodes:
                raise ServiceError(429, f"more than {self.max_episodes} open episodes")
            env, _ = self._episodes.setdefault(episode, (self.factory(), {}))
        first = env.reset(prompt)
        wire = prompt_to_wire(first)
        return {"prompt_token_ids": wire["prompt_token_ids"], "prompt_text": wire["prompt_text"]}

    def _step(self, episode: str, body: Mapping[str, Any]) -> dict[str, Any]:
        with self._lock:
            entry = self._episodes.get(episode)
        if entry is None:
            raise ServiceError(404, f"unknown episode {episode!r} (reset it first)")
        env, answers = entry
        turn = body.get("turn")
        if not isinstance(turn, int):
            raise ServiceError(422, "the body needs an integer 'turn'")
        if turn in answers:
            return answers[turn]
        try:
            action = action_from_wire(body["action"])
        except (KeyError, TypeError, ValueError) as error:
            raise ServiceError(422, f"bad action: {error!r}") from None
        answers[turn] = outcome_to_wire(env.step(action))
        return answers[turn]


def create_app(
    service: EnvironmentService,
    *,
    token: str | None = None,
    max_request_bytes: int = 1 << 20,
    header_timeout_s: float = HEADER_TIMEOUT_S,
    body_timeout_s: float = BODY_TIMEOUT_S,
) -> Any:
    """A Starlette app serving ``service`` (``POST /reset``, ``/step``, ``/close``). With a
    ``token`` every request needs ``Authorization: Bearer <token>`` (401 otherwise); bodies
    declared larger than ``max_request_bytes`` get 413, bodies slower than ``body_timeout_s``
    408, and connections without complete headers after ``header_timeout_s`` are closed (the
    reward service's guard, :mod:`lightrft.adapters.service_access`; serve it on 127.0.0.1,
    or with a token)."""
    from starlette.applications import Starlette
    from starlette.concurrency import run_in_threadpool
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    from lightrft.adapters.service_access import AccessGuard

    async def endpoint(request: Request) -> JSONResponse:
        try:
            body = await request.json()
        except ValueError:
            return JSONResponse({"detail": "the body is not JSON"}, status_code=400)
        try:
            verb = request.path_params["verb"]
            return JSONResponse(await run_in_threadpool(service.handle, verb, body))
        except ServiceError as error:
            return JSONResponse({"detail": error.detail}, status_code=error.status)
        except Exception as error:  # noqa: BLE001 - the environment failed: a 500 to retry
            return JSONResponse({"detail": repr(error)}, status_code=500)

    app = Starlette(routes=[Route("/{verb}", endpoint, methods=["POST"])])
    app.add_middleware(
        AccessGuard,
        token=token,
        max_request_bytes=max_request_bytes,
        body_timeout_s=body_timeout_s,
    )
    app.state.token_required = token is not None  # read by check_exposure before serving
    app.state.header_timeout_s = header_timeout_s  # read by the server's protocol
    return app


def serve(app: Any, *, host: str = "127.0.0.1", port: int = 8000) -> None:
    """Serves an environment app in the foreground (a non-loopback ``host`` needs a token)."""
    from lightrft.adapters.service_access import serve as serve_app

    serve_app(app, host=host, port=port)
