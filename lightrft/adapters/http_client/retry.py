"""JSON POSTs with a deadline per attempt, retries with full-jitter backoff, and typed errors.

An attempt that fails in a way worth retrying (connection refused or reset, timeout, HTTP
5xx or 429) is retried after an exponential backoff with full jitter: attempt k (from 0)
waits a uniform random time in [0, min(backoff_max_s, backoff_base_s * 2^k)] (Brooker, AWS
Architecture Blog 2015). After ``max_attempts`` attempts, or at once for other HTTP errors
and for an answer its ``validate`` refuses, the call fails with the caller's error type
(``make_error(message, attempts)``), whose message names the service (``what``) and URL.
Used by the remote reward source and the HTTP environment, each with its ``send`` over
httpx (:mod:`~lightrft.adapters.http_client.json_post`); this module imports only the
standard library, so the fakes stay light.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

RETRY_STATUS = frozenset({429, 500, 502, 503, 504})
T = TypeVar("T")
Send = Callable[[str, Any], Any]
"""One attempt: POSTs the JSON payload to the URL and returns the decoded answer; raises
:class:`Retryable` or :class:`CallFailed` (the adapter maps its HTTP library's errors)."""


class Retryable(Exception):
    """One attempt failed in a way worth retrying."""


class CallFailed(Exception):
    """A non-retryable failure: ``validate`` raises it for a wrong answer."""


@dataclass(frozen=True)
class RetryPolicy:
    """How many attempts, and the backoff between them."""

    max_attempts: int = 4
    backoff_base_s: float = 0.5
    backoff_max_s: float = 8.0

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError(f"max_attempts must be >= 1, got {self.max_attempts}")


class JsonPoster:
    """POSTs JSON to one service with :class:`RetryPolicy` (see the module docstring)."""

    def __init__(
        self,
        send: Send,
        policy: RetryPolicy,
        what: str,
        make_error: Callable[[str, int], Exception],
        *,
        seed: int | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.send, self.policy, self.what = send, policy, what
        self.make_error = make_error
        self._rng = random.Random(seed)
        self._sleep = sleep

    def backoff_s(self, attempt: int) -> float:
        """The wait after failed attempt ``attempt`` (0-based): full jitter."""
        p = self.policy
        return self._rng.uniform(0.0, min(p.backoff_max_s, p.backoff_base_s * 2**attempt))

    def post(self, url: str, payload: Any, validate: Callable[[Any], T]) -> tuple[T, int, float]:
        """(validated answer, attempts used, latency of the successful attempt)."""
        last = ""
        base = url.rsplit("/", 1)[0]
        for attempt in range(self.policy.max_attempts):
            if attempt:
                self._sleep(self.backoff_s(attempt - 1))
            started = time.perf_counter()
            try:
                value = validate(self.send(url, payload))
            except Retryable as error:
                last = str(error)
                continue
            except CallFailed as error:
                raise self.make_error(str(error), attempt + 1) from None
            return value, attempt + 1, time.perf_counter() - started
        raise self.make_error(
            f"{self.what} {base} failed {self.policy.max_attempts} attempts; last error: {last}",
            self.policy.max_attempts,
        )
