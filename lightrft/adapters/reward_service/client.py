"""``RemoteRewardSource``: a ``RewardSource`` that asks a reward service over HTTP.

B samples. A batch goes out in requests of at most ``request_batch`` samples. A request that
fails in a way worth retrying (connection refused or reset, timeout, HTTP 5xx or 429) is
retried after an exponential backoff with full jitter: attempt k (from 0) waits a uniform
random time in [0, min(backoff_max_s, backoff_base_s * 2^k)] (the "full jitter" scheme of
Brooker, AWS Architecture Blog 2015). After ``max_attempts`` attempts, or at once for other
HTTP errors (401, 413, 422 ...), the request has failed: with ``on_failure="raise"`` (the
default) a :class:`RemoteRewardError` names the URL, the attempts and the last error; with
``"score"`` its samples get ``failure_score`` and are counted in the ``failures`` metric.
A response must hold exactly one finite number per sample, else it is an error of the same
kind (never a silently wrong reward). Metrics per ``score`` call: ``requests`` (requests
made, each counted once however many attempts it took, failed ones included), ``retries``
(attempts after the first, failed requests' included), ``failures`` (samples of failed
requests), ``latency_mean_s`` and ``latency_max_s`` (of the successful attempts).
"""

from __future__ import annotations

import math
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any, Literal

import httpx
import structlog
import torch

from lightrft.adapters.http_client.json_post import httpx_send
from lightrft.adapters.http_client.retry import CallFailed, JsonPoster, RetryPolicy
from lightrft.adapters.reward_parts.source_bases import RuleSource
from lightrft.adapters.reward_service.protocol import wire_samples
from lightrft.domain.ports import RewardSourceUnavailableError
from lightrft.domain.types import RewardResult, RewardSample

log = structlog.get_logger(__name__)

FailurePolicy = Literal["raise", "score"]


class RemoteRewardError(RewardSourceUnavailableError):
    """A reward request failed for good (after retries, or a non-retryable answer);
    ``attempts``: how many were made."""

    def __init__(self, message: str, attempts: int = 1) -> None:
        super().__init__(message)
        self.attempts = attempts


class RemoteRewardSource(RuleSource):
    """Scores by POSTing to ``<url>/score`` (see the module docstring)."""

    def __init__(
        self,
        url: str,
        *,
        name: str = "remote",
        token: str | None = None,
        timeout_s: float = 30.0,
        max_attempts: int = 4,
        backoff_base_s: float = 0.5,
        backoff_max_s: float = 8.0,
        request_batch: int = 256,
        on_failure: FailurePolicy = "raise",
        failure_score: float = 0.0,
        seed: int | None = None,
        sleep: Callable[[float], None] = time.sleep,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"reward service url must start with http:// or https://, got {url!r}")
        if max_attempts < 1 or request_batch < 1 or timeout_s <= 0:
            raise ValueError("max_attempts and request_batch must be >= 1, timeout_s > 0")
        if on_failure not in ("raise", "score"):
            raise ValueError(f"on_failure must be 'raise' or 'score', got {on_failure!r}")
        if not math.isfinite(failure_score):
            raise ValueError(f"failure_score must be finite, got {failure_score}")
        self.url = url.rstrip("/")
        self._name = name
        self.max_attempts = max_attempts
        self.backoff_base_s, self.backoff_max_s = backoff_base_s, backoff_max_s
        self.request_batch = request_batch
        self.on_failure, self.failure_score = on_failure, failure_score
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._client = httpx.Client(timeout=timeout_s, headers=headers, transport=transport)
        self._poster = JsonPoster(
            httpx_send(self._client, "reward service"),
            RetryPolicy(max_attempts, backoff_base_s, backoff_max_s),
            "reward service",
            RemoteRewardError,
            seed=seed,
            sleep=sleep,
        )

    def score(self, samples: Sequence[RewardSample]) -> RewardResult:
        """Scores (B,) float32 in order; see the module docstring for failures."""
        scores: list[float] = []
        latencies: list[float] = []
        requests = retries = failures = 0
        for start in range(0, len(samples), self.request_batch):
            chunk = samples[start : start + self.request_batch]
            requests += 1
            try:
                values, attempts, latency = self._request(chunk)
                retries += attempts - 1
                latencies.append(latency)
            except RemoteRewardError as error:
                if self.on_failure == "raise":
                    raise
                log.warning(
                    "reward.remote.failed", url=self.url, samples=len(chunk), error=str(error)
                )
                retries += error.attempts - 1
                failures += len(chunk)
                values = [self.failure_score] * len(chunk)
            scores.extend(values)
        metrics = {
            "requests": torch.tensor(float(requests)),
            "retries": torch.tensor(float(retries)),
            "failures": torch.tensor(float(failures)),
            "latency_mean_s": torch.tensor(sum(latencies) / len(latencies) if latencies else 0.0),
            "latency_max_s": torch.tensor(max(latencies, default=0.0)),
        }
        return RewardResult(torch.tensor(scores, dtype=torch.float32), metrics)

    def backoff_s(self, attempt: int) -> float:
        """The wait after failed attempt ``attempt`` (0-based): full jitter."""
        return self._poster.backoff_s(attempt)

    def _request(self, chunk: Sequence[RewardSample]) -> tuple[list[float], int, float]:
        """(scores, attempts used, latency of the successful attempt)."""
        # one id per request, the same on every attempt: the service scores a retry once
        payload = {"samples": wire_samples(chunk), "request_id": uuid.uuid4().hex}
        return self._poster.post(
            f"{self.url}/score", payload, lambda body: self._validated(body, len(chunk))
        )

    def _validated(self, body: Any, expected: int) -> list[float]:
        scores = body.get("scores") if isinstance(body, dict) else None
        if not isinstance(scores, list):
            raise CallFailed(f"reward service {self.url} sent no 'scores' list")
        if len(scores) != expected:
            raise CallFailed(
                f"reward service {self.url} returned {len(scores)} scores for {expected} samples"
            )
        for i, value in enumerate(scores):
            if (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not math.isfinite(value)
            ):
                raise CallFailed(
                    f"reward service {self.url} returned a non-finite or non-numeric score "
                    f"{value!r} for sample {i}"
                )
        return [float(v) for v in scores]

    def close(self) -> None:
        """Closes the HTTP connection pool."""
        self._client.close()
