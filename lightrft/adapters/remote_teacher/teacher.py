"""``RemoteTeacher``: a :class:`~lightrft.domain.ports.ReferenceModel` whose log-probs come
from a served model (SGLang or vLLM, :mod:`~lightrft.adapters.remote_teacher.dialects`).

Each row's tokens (``attention_mask`` 1: the prompt without its left padding, then the
response without its right padding) go out as ids, ``request_batch`` rows per request, with
the retries and deadlines of :mod:`~lightrft.adapters.http_client.retry` (5xx, 429,
timeouts and refused connections are retried with backoff; other failures are not). The
log-prob of response token ``t`` is the server's log-prob of that input token. A request
that fails for good raises :class:`RemoteTeacherError` naming the URL.

The server gives log-probs of its unscaled logits, so only ``temperature`` 1 is served.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import Any

import httpx
import torch

from lightrft.adapters.http_client.json_post import httpx_send, response_detail
from lightrft.adapters.http_client.retry import CallFailed, JsonPoster, RetryPolicy
from lightrft.adapters.remote_teacher.dialects import dialect_of, input_logprobs
from lightrft.domain.ports import PolicyOutput
from lightrft.domain.types import SequenceBatch


class RemoteTeacherError(RuntimeError):
    """A served teacher failed for good; ``attempts``: how many were made."""

    def __init__(self, message: str, attempts: int = 1) -> None:
        super().__init__(message)
        self.attempts = attempts


def row_tokens(batch: SequenceBatch) -> tuple[list[list[int]], list[int]]:
    """Each row's real token ids, and where its response starts among them."""
    prompt_columns = batch.input_ids.shape[1] - batch.response_length
    ids, starts = [], []
    for row in range(batch.input_ids.shape[0]):
        keep = batch.attention_mask[row].bool()
        ids.append(batch.input_ids[row][keep].tolist())
        starts.append(int(keep[:prompt_columns].sum()))
    return ids, starts


class RemoteTeacher:
    """The teacher served at ``url`` (see the module docstring)."""

    def __init__(
        self,
        url: str,
        *,
        timeout_s: float = 120.0,
        max_attempts: int = 4,
        backoff_base_s: float = 0.5,
        backoff_max_s: float = 8.0,
        request_batch: int = 32,
        seed: int | None = None,
        sleep: Callable[[float], None] = time.sleep,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        if request_batch < 1 or timeout_s <= 0:
            raise ValueError("request_batch must be >= 1 and timeout_s > 0")
        self.url, self.dialect, self.request_batch = url, dialect_of(url), request_batch
        self.what = f"{self.dialect.name} teacher"
        self._client = httpx.Client(timeout=timeout_s, transport=transport)
        self.poster = JsonPoster(
            httpx_send(self._client, self.what),
            RetryPolicy(max_attempts, backoff_base_s, backoff_max_s),
            self.what,
            RemoteTeacherError,
            seed=seed,
            sleep=sleep,
        )
        self.requests = 0

    def model_path(self) -> str | None:
        """The model (or tokenizer) path the server reports, or None."""
        root = self.url.rstrip("/").removesuffix(self.dialect.ending)
        try:
            response = self._client.get(f"{root}/{self.dialect.info_path}")
        except httpx.HTTPError as error:
            raise RemoteTeacherError(f"{self.what} {self.url}: cannot reach it ({error})") from None
        if response.status_code != 200:
            raise RemoteTeacherError(
                f"{self.what} {root}/{self.dialect.info_path}: HTTP {response.status_code}: "
                f"{response_detail(response)}"
            )
        info = response.json()
        if isinstance(info, dict) and isinstance(info.get("data"), list) and info["data"]:
            info = info["data"][0]  # vLLM's model list
        if not isinstance(info, dict):
            return None
        for key in ("tokenizer_path", "model_path", "root"):
            if isinstance(info.get(key), str):
                return str(info[key])
        return None

    def forward(
        self, batch: SequenceBatch, *, temperature: float = 1.0, with_entropy: bool = False
    ) -> PolicyOutput:
        """Log-probs (B, R) of the response tokens; entropy is not served (None)."""
        if temperature != 1.0:
            raise ValueError(
                f"{self.what} {self.url} gives log-probs at temperature 1, not {temperature}: "
                "set algorithm.logprob_temperature=1.0 (or rollout.temperature=1.0)"
            )
        ids, starts = row_tokens(batch)
        out = torch.zeros(tuple(batch.response_mask.shape), dtype=torch.float32)
        for first in range(0, len(ids), self.request_batch):
            chunk = ids[first : first + self.request_batch]
            rows, _, _ = self.poster.post(
                self.url, self.dialect.request(chunk), functools.partial(self._read, chunk=chunk)
            )
            self.requests += 1
            for offset, logprobs in enumerate(rows):
                row = first + offset
                response = logprobs[starts[row] - 1 :]  # entry i predicts token i + 1
                width = min(len(response), out.shape[1])
                out[row, :width] = torch.tensor(response[:width])
        return PolicyOutput(out * batch.response_mask.to(out.dtype))

    def _read(self, answer: Any, chunk: list[list[int]]) -> list[list[float]]:
        where = f"{self.what} {self.url}"
        try:
            results = self.dialect.results(answer, len(chunk))
            return [
                input_logprobs(self.dialect.entries(result), sent, f"{where}, sequence {i}")
                for i, (result, sent) in enumerate(zip(results, chunk, strict=True))
            ]
        except CallFailed as error:
            text = str(error)
            raise CallFailed(text if text.startswith(where) else f"{where}: {text}") from None

    def offload(self) -> None:
        """Nothing here holds the weights."""

    def onload(self) -> None:
        """Nothing here holds the weights."""

    def close(self) -> None:
        """Closes the HTTP connection pool."""
        self._client.close()
