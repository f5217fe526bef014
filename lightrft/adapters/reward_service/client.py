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

import uuid
from collections.abc import Sequence
from typing import Any

from lightrft.adapters.http_client.remote_source import (
    Answer,
    BatchedRemoteSource,
    RemoteScoringError,
)
from lightrft.adapters.http_client.retry import CallFailed
from lightrft.adapters.reward_service.protocol import wire_samples
from lightrft.domain.types import RewardSample


class RemoteRewardError(RemoteScoringError):
    """A reward request failed for good (after retries, or a non-retryable answer);
    ``attempts``: how many were made."""


class RemoteRewardSource(BatchedRemoteSource):
    """Scores by POSTing to ``<url>/score`` (see the module docstring); keyword options as
    :class:`~lightrft.adapters.http_client.remote_source.BatchedRemoteSource`'s."""

    def __init__(self, url: str, *, name: str = "remote", **options: Any) -> None:
        super().__init__(
            url.rstrip("/"), "reward service", name=name, error=RemoteRewardError, **options
        )

    def request(self, chunk: Sequence[RewardSample]) -> tuple[Answer, int, float]:
        """(scores and no metrics, attempts used, latency of the successful attempt)."""
        # one id per request, the same on every attempt: the service scores a retry once
        payload = {"samples": wire_samples(chunk), "request_id": uuid.uuid4().hex}
        return self.poster.post(
            f"{self.url}/score", payload, lambda body: (self._validated(body, len(chunk)), {})
        )

    def _validated(self, body: Any, expected: int) -> list[float]:
        scores = body.get("scores") if isinstance(body, dict) else None
        if not isinstance(scores, list):
            raise CallFailed(f"reward service {self.url} sent no 'scores' list")
        if len(scores) != expected:
            raise CallFailed(
                f"reward service {self.url} returned {len(scores)} scores for {expected} samples"
            )
        return self.finite_scores(scores, "score")
