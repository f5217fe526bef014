"""``HttpEnvironment``: an environment that runs elsewhere, reached over HTTP.

``HttpEnvironments(url, ...)`` is the environment factory of a run: it holds one connection
pool and builds an :class:`HttpEnvironment` per episode, which speaks the protocol of
:mod:`~lightrft.adapters.agents.http_wire`. Every request has a deadline (``timeout_s``) and
is retried like the remote reward source's (:mod:`lightrft.adapters.http_client.retry`:
connection errors, timeouts, 5xx and 429, full-jitter backoff, ``max_attempts``); a step is
safe to retry because the service answers a repeated ``(episode, turn)`` with its first
answer. A request that fails for good raises :class:`EnvironmentUnavailableError` naming the
URL, the attempts and the last error: the rollout ends that episode and counts it
(``agent/env_errors``), the other episodes go on. Successful calls add the counters
``http/requests`` and ``http/retries`` to the episode. An answer over ``max_response_bytes``
is refused while it streams in (not retried): that episode ends ``env_error``.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import httpx

from lightrft.adapters.agents.http_wire import (
    action_to_wire,
    first_input_from_wire,
    outcome_from_wire,
    prompt_to_wire,
)
from lightrft.adapters.http_client.json_post import httpx_send
from lightrft.adapters.http_client.retry import JsonPoster, RetryPolicy
from lightrft.domain.agent import Action, StepOutcome
from lightrft.domain.types import PromptRecord

T = TypeVar("T")

MAX_RESPONSE_BYTES = 4 * 2**20
"""The largest answer read from an environment service, by default."""


class EnvironmentUnavailableError(RuntimeError):
    """The environment service did not answer usefully (after retries); ``attempts`` made."""

    def __init__(self, message: str, attempts: int = 1) -> None:
        super().__init__(message)
        self.attempts = attempts


class HttpEnvironments:
    """The factory: one ``HttpEnvironment`` per episode over a shared connection pool."""

    def __init__(
        self,
        url: str,
        *,
        token: str | None = None,
        timeout_s: float = 30.0,
        retry: RetryPolicy | None = None,
        transport: httpx.BaseTransport | None = None,
        seed: int | None = None,
        max_response_bytes: int = MAX_RESPONSE_BYTES,
    ) -> None:
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"environment url must start with http:// or https://, got {url!r}")
        if not timeout_s > 0:
            raise ValueError(f"timeout_s must be > 0, got {timeout_s}")
        if max_response_bytes < 1:
            raise ValueError(f"max_response_bytes must be >= 1, got {max_response_bytes}")
        self.url = url.rstrip("/")
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.client = httpx.Client(timeout=timeout_s, headers=headers, transport=transport)
        self.poster = JsonPoster(
            httpx_send(self.client, "environment service", max_response_bytes),
            retry or RetryPolicy(),
            "environment service",
            EnvironmentUnavailableError,
            seed=seed,
        )

    def __call__(self) -> HttpEnvironment:
        return HttpEnvironment(self)

    def close(self) -> None:
        """Closes the connection pool."""
        self.client.close()


class HttpEnvironment:
    """The ``Environment`` port over the service (see the module docstring)."""

    def __init__(self, service: HttpEnvironments) -> None:
        self.service = service
        self.episode = uuid.uuid4().hex
        self.turn = 0
        self.prompt: PromptRecord | None = None
        self._retries = 0
        self._requests = 0

    def _post(self, verb: str, payload: Mapping[str, Any], validate: Callable[[Any], T]) -> T:
        value, attempts, _ = self.service.poster.post(
            f"{self.service.url}/{verb}", payload, validate
        )
        self._requests += 1
        self._retries += attempts - 1
        return value

    def reset(self, prompt: PromptRecord) -> PromptRecord:
        """Starts the episode on the service; returns the first input it asks for."""
        self.prompt = prompt
        where = f"environment service {self.service.url}"
        payload = {"episode": self.episode, "prompt": prompt_to_wire(prompt)}
        return self._post("reset", payload, lambda body: first_input_from_wire(body, prompt, where))

    def step(self, action: Action) -> StepOutcome:
        """One turn on the service (retried safely: the service deduplicates by turn)."""
        where = f"environment service {self.service.url}"
        payload = {"episode": self.episode, "turn": self.turn, "action": action_to_wire(action)}
        outcome = self._post("step", payload, lambda body: outcome_from_wire(body, where))
        self.turn += 1
        counters = dict(outcome.counters)
        counters["http/requests"] = counters.get("http/requests", 0.0) + self._requests
        counters["http/retries"] = counters.get("http/retries", 0.0) + self._retries
        self._requests = self._retries = 0
        return StepOutcome(outcome.observation, outcome.reward, outcome.done, counters)

    def close(self) -> None:
        """Ends the episode on the service."""
        self._post("close", {"episode": self.episode}, lambda body: body)
