"""``PeerRemoteRewardSource``: a ``RewardSource`` that asks another framework's reward server.

Each request POSTs its :class:`~lightrft.adapters.reward_protocols.wire_formats.WireFormat`'s
body to ``url`` itself (the endpoint, e.g. ``http://host:5000/get_reward``) and reads the
answer by that format; deadlines, retries, the token header, failures and metrics are those
of every remote source (:class:`~lightrft.adapters.http_client.remote_source.BatchedRemoteSource`),
plus the server's ``extra_logs`` as ``extra_<name>``. An answer must hold one finite number
per sample; a malformed one is one line naming the URL, never retried.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

from lightrft.adapters.http_client.remote_source import Answer, BatchedRemoteSource
from lightrft.adapters.http_client.retry import CallFailed
from lightrft.adapters.reward_protocols.wire_formats import WireFormat
from lightrft.domain.types import RewardSample


class PeerRemoteRewardSource(BatchedRemoteSource):
    """Scores by POSTing ``wire``'s body to ``url`` (see the module docstring); keyword
    options as :class:`BatchedRemoteSource`'s."""

    def __init__(self, url: str, wire: WireFormat, *, name: str = "remote", **options: Any) -> None:
        super().__init__(url, f"{wire.name} reward server", name=name, **options)
        self.wire = wire

    def request(self, chunk: Sequence[RewardSample]) -> tuple[Answer, int, float]:
        read = partial(self._read, count=len(chunk))
        return self.poster.post(self.url, self.wire.body(chunk), read)

    def _read(self, answer: Any, count: int) -> Answer:
        try:
            raw, metrics = self.wire.read(answer, count)
        except ValueError as error:
            raise CallFailed(f"{self.what} {self.url}: malformed answer: {error}") from None
        return self.finite_scores(raw, "reward"), metrics
