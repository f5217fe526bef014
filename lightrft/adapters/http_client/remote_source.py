"""``BatchedRemoteSource``: the base of the reward sources that ask a server over HTTP.

B samples go out in requests of at most ``request_batch`` samples; a subclass says how one
request is made and read (:meth:`BatchedRemoteSource.request`, over ``self.poster``). Each
attempt has ``timeout_s``; connection errors, timeouts, HTTP 5xx and 429 are retried with
full-jitter backoff up to ``max_attempts`` (:mod:`~lightrft.adapters.http_client.retry`);
other HTTP errors and malformed answers are not. A request that fails for good raises
:class:`RemoteScoringError` (one line naming the server and the reason) with
``on_failure="raise"``, or scores ``failure_score`` for its samples with ``"score"``.
``token`` goes out as ``Authorization: Bearer``. Metrics per ``score`` call: ``requests``,
``retries`` (attempts after the first), ``failures`` (samples of failed requests),
``latency_mean_s``, ``latency_max_s`` (successful attempts), and the metrics each answer
brings (mean over requests).
"""

from __future__ import annotations

import math
import time
from abc import abstractmethod
from collections.abc import Callable, Sequence
from typing import Any, Literal

import httpx
import structlog
import torch

from lightrft.adapters.http_client.json_post import httpx_send
from lightrft.adapters.http_client.retry import CallFailed, JsonPoster, RetryPolicy
from lightrft.adapters.reward_parts.source_bases import RuleSource
from lightrft.domain.ports import RewardSourceUnavailableError
from lightrft.domain.types import RewardResult, RewardSample

log = structlog.get_logger(__name__)

Answer = tuple[list[float], dict[str, float]]
"""One request's scores in order, and the metrics its answer brought."""


class RemoteScoringError(RewardSourceUnavailableError):
    """A request failed for good; ``attempts``: how many were made."""

    def __init__(self, message: str, attempts: int = 1) -> None:
        super().__init__(message)
        self.attempts = attempts


class BatchedRemoteSource(RuleSource):
    """Scores in requests to ``url`` (see the module docstring); ``what`` names the server
    in errors (e.g. "openrlhf reward server")."""

    def __init__(
        self,
        url: str,
        what: str,
        *,
        name: str,
        token: str | None = None,
        timeout_s: float = 30.0,
        max_attempts: int = 4,
        backoff_base_s: float = 0.5,
        backoff_max_s: float = 8.0,
        request_batch: int = 256,
        on_failure: Literal["raise", "score"] = "raise",
        failure_score: float = 0.0,
        seed: int | None = None,
        sleep: Callable[[float], None] = time.sleep,
        transport: httpx.BaseTransport | None = None,
        error: type[RemoteScoringError] = RemoteScoringError,
    ) -> None:
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"{what} url must start with http:// or https://, got {url!r}")
        if max_attempts < 1 or request_batch < 1 or timeout_s <= 0:
            raise ValueError("max_attempts and request_batch must be >= 1, timeout_s > 0")
        if not math.isfinite(failure_score):
            raise ValueError(f"failure_score must be finite, got {failure_score}")
        if on_failure not in ("raise", "score"):
            raise ValueError(f"on_failure must be 'raise' or 'score', got {on_failure!r}")
        self.url, self.what, self._name = url, what, name
        self.request_batch = request_batch
        self.on_failure, self.failure_score = on_failure, failure_score
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._client = httpx.Client(timeout=timeout_s, headers=headers, transport=transport)
        self.poster = JsonPoster(
            httpx_send(self._client, what),
            RetryPolicy(max_attempts, backoff_base_s, backoff_max_s),
            what,
            error,
            seed=seed,
            sleep=sleep,
        )

    def backoff_s(self, attempt: int) -> float:
        """The wait after failed attempt ``attempt`` (0-based): full jitter."""
        return self.poster.backoff_s(attempt)

    def finite_scores(self, raw: Sequence[Any], noun: str) -> list[float]:
        """``raw`` as floats; a non-numeric or non-finite value is a :class:`CallFailed`
        naming the server and the sample (a malformed answer: not retried)."""
        for i, value in enumerate(raw):
            if (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not math.isfinite(value)
            ):
                raise CallFailed(
                    f"{self.what} {self.url} returned a non-finite or non-numeric {noun} "
                    f"{value!r} for sample {i}"
                )
        return [float(v) for v in raw]

    @abstractmethod
    def request(self, chunk: Sequence[RewardSample]) -> tuple[Answer, int, float]:
        """(answer, attempts used, latency of the successful attempt) of one request;
        raises :class:`RemoteScoringError` when it fails for good."""

    def score(self, samples: Sequence[RewardSample]) -> RewardResult:
        """Scores (B,) float32 in order; see the module docstring for failures."""
        scores: list[float] = []
        latencies: list[float] = []
        brought: dict[str, list[float]] = {}
        retries = failures = 0
        for start in range(0, len(samples), self.request_batch):
            chunk = samples[start : start + self.request_batch]
            try:
                (values, metrics), attempts, latency = self.request(chunk)
            except RemoteScoringError as error:
                if self.on_failure == "raise":
                    raise
                log.warning(
                    "reward.remote.failed", url=self.url, samples=len(chunk), error=str(error)
                )
                attempts, failures = error.attempts, failures + len(chunk)
                values, metrics = [self.failure_score] * len(chunk), {}
            else:
                latencies.append(latency)
            retries += attempts - 1
            scores.extend(values)
            for key, number in metrics.items():
                brought.setdefault(key, []).append(number)
        result = {
            "requests": torch.tensor(float(-(-len(samples) // self.request_batch))),
            "retries": torch.tensor(float(retries)),
            "failures": torch.tensor(float(failures)),
            "latency_mean_s": torch.tensor(sum(latencies) / len(latencies) if latencies else 0.0),
            "latency_max_s": torch.tensor(max(latencies, default=0.0)),
        }
        result |= {key: torch.tensor(sum(v) / len(v)) for key, v in brought.items()}
        return RewardResult(torch.tensor(scores, dtype=torch.float32), result)

    def close(self) -> None:
        """Closes the HTTP connection pool."""
        self._client.close()
