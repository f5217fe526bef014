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
import random
import time
from collections.abc import Callable, Sequence
from typing import Any, Literal

import httpx
import structlog
import torch

from lightrft.adapters.reward_service.protocol import wire_samples
from lightrft.domain.ports import RewardSourceUnavailableError
from lightrft.domain.types import RewardResult, RewardSample

log = structlog.get_logger(__name__)

FailurePolicy = Literal["raise", "score"]
RETRY_STATUS = frozenset({429, 500, 502, 503, 504})


class RemoteRewardError(RewardSourceUnavailableError):
    """A reward request failed for good (after retries, or a non-retryable answer);
    ``attempts``: how many were made."""

    def __init__(self, message: str, attempts: int = 1) -> None:
        super().__init__(message)
        self.attempts = attempts


class _Retryable(Exception):
    """One attempt failed in a way worth retrying."""


class RemoteRewardSource:
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
        self._rng = random.Random(seed)
        self._sleep = sleep
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._client = httpx.Client(timeout=timeout_s, headers=headers, transport=transport)

    @property
    def name(self) -> str:
        return self._name

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
        return self._rng.uniform(0.0, min(self.backoff_max_s, self.backoff_base_s * 2**attempt))

    def _request(self, chunk: Sequence[RewardSample]) -> tuple[list[float], int, float]:
        """(scores, attempts used, latency of the successful attempt)."""
        payload = {"samples": wire_samples(chunk)}
        last = ""
        for attempt in range(self.max_attempts):
            if attempt:
                self._sleep(self.backoff_s(attempt - 1))
            started = time.perf_counter()
            try:
                response = self._post(payload)
                values = self._validated(response, len(chunk))
            except _Retryable as error:
                last = str(error)
                log.info("reward.remote.retry", url=self.url, attempt=attempt + 1, error=last)
                continue
            except RemoteRewardError as error:
                error.attempts = attempt + 1
                raise
            return values, attempt + 1, time.perf_counter() - started
        raise RemoteRewardError(
            f"reward service {self.url} failed {self.max_attempts} attempts; last error: {last}",
            attempts=self.max_attempts,
        )

    def _post(self, payload: dict[str, Any]) -> Any:
        try:
            response = self._client.post(f"{self.url}/score", json=payload)
        except httpx.TimeoutException as error:
            raise _Retryable(f"timed out ({type(error).__name__})") from None
        except httpx.TransportError as error:
            raise _Retryable(f"cannot reach it ({type(error).__name__}: {error})") from None
        if response.status_code in RETRY_STATUS:
            raise _Retryable(f"HTTP {response.status_code}: {_detail(response)}")
        if response.status_code != 200:
            raise RemoteRewardError(
                f"reward service {self.url} refused the request: HTTP {response.status_code}: "
                f"{_detail(response)}"
            )
        try:
            return response.json()
        except ValueError:
            raise RemoteRewardError(
                f"reward service {self.url} sent a body that is not JSON"
            ) from None

    def _validated(self, body: Any, expected: int) -> list[float]:
        scores = body.get("scores") if isinstance(body, dict) else None
        if not isinstance(scores, list):
            raise RemoteRewardError(f"reward service {self.url} sent no 'scores' list")
        if len(scores) != expected:
            raise RemoteRewardError(
                f"reward service {self.url} returned {len(scores)} scores for {expected} samples"
            )
        for i, value in enumerate(scores):
            if (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not math.isfinite(value)
            ):
                raise RemoteRewardError(
                    f"reward service {self.url} returned a non-finite or non-numeric score "
                    f"{value!r} for sample {i}"
                )
        return [float(v) for v in scores]

    def onload(self) -> None:
        """Nothing lives on this device."""

    def offload(self) -> None:
        """Nothing lives on this device."""

    def close(self) -> None:
        """Closes the HTTP connection pool."""
        self._client.close()


def _detail(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        text = response.text
    else:
        text = str(body.get("detail", body) if isinstance(body, dict) else body)
    return " ".join(text.split())[:200]  # one line, even of an HTML error page
