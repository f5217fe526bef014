"""Reward service and RemoteRewardSource on loopback: round trip, load, failures, auth."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator, Sequence

import httpx
import pytest
import torch
from fastapi import FastAPI

from lightrft.adapters.reward_models import HfScalarRewardModel
from lightrft.adapters.reward_service import (
    BackgroundServer,
    RemoteRewardError,
    RemoteRewardSource,
    create_app,
)
from lightrft.domain.types import Completion, PromptRecord, RewardResult, RewardSample
from tests.unit.adapters.hf.hf_tiny import tiny_tokenizer
from tests.unit.adapters.reward_models.rm_tiny import tiny_classifier


def samples(texts: Sequence[str], prompt: str = "q: ") -> list[RewardSample]:
    return [
        RewardSample(
            PromptRecord(f"u{i}", prompt, (5, 6), reference="7"),
            Completion(0, (8, 9), text, "stop"),
        )
        for i, text in enumerate(texts)
    ]


class TextValue:
    """Score = the integer in the response text (so every answer is checkable); counts calls."""

    name = "text_value"

    def __init__(self, delay_s: float = 0.0, fail_first: int = 0) -> None:
        self.delay_s, self.fail_first = delay_s, fail_first
        self.calls = self.scored = 0
        self.lock = threading.Lock()

    def score(self, batch: Sequence[RewardSample]) -> RewardResult:
        with self.lock:
            self.calls += 1
            call = self.calls
        if call <= self.fail_first:
            raise RuntimeError(f"flaky failure {call}")
        time.sleep(self.delay_s)
        with self.lock:
            self.scored += len(batch)
        values = [float(s.completion.text.split()[-1]) for s in batch]
        return RewardResult(
            torch.tensor(values, dtype=torch.float64), {"batch": torch.tensor(float(len(batch)))}
        )

    def onload(self) -> None: ...

    def offload(self) -> None: ...


@pytest.fixture
def no_sleep() -> list[float]:
    return []


def client(url: str, waits: list[float] | None = None, **kwargs: object) -> RemoteRewardSource:
    opts: dict[str, object] = {
        "timeout_s": 5.0,
        "max_attempts": 3,
        "backoff_base_s": 0.01,
        "seed": 0,
    }
    opts.update(kwargs)
    sleep = waits.append if waits is not None else time.sleep
    return RemoteRewardSource(url, sleep=sleep, **opts)  # type: ignore[arg-type]


@pytest.fixture
def served() -> Iterator[tuple[str, TextValue]]:
    source = TextValue()
    with BackgroundServer(create_app(source, batch_window_s=0.002)) as server:
        yield server.url, source


def test_loopback_round_trip_equals_in_process() -> None:
    rm = HfScalarRewardModel(
        tiny_classifier(seed=4), tiny_tokenizer(), torch.device("cpu"), name="rm"
    )
    batch = samples(["4", "hello there", "blue sky", "x" * 40])
    local = rm.score(batch).scores
    with BackgroundServer(create_app(rm)) as server:
        remote = client(server.url, name="rm").score(batch)
        health = httpx.get(f"{server.url}/health").json()
    assert torch.equal(remote.scores, local)  # float32 -> JSON -> float32 is exact
    assert health == {"status": "ok", "source": "rm"}
    assert remote.metrics["requests"] == 1 and remote.metrics["retries"] == 0
    assert float(remote.metrics["latency_mean_s"]) > 0


def test_32_clients_x_50_requests_lose_and_duplicate_nothing(served: tuple[str, TextValue]) -> None:
    url, source = served
    errors: list[BaseException] = []
    results: dict[tuple[int, int], list[float]] = {}

    def worker(c: int) -> None:
        remote = client(url)
        try:
            for r in range(50):
                texts = [f"answer {c * 1000 + r * 10 + k}" for k in range(3)]
                results[(c, r)] = remote.score(samples(texts)).scores.tolist()
        except BaseException as error:  # noqa: BLE001 - reported below
            errors.append(error)
        finally:
            remote.close()

    threads = [threading.Thread(target=worker, args=(c,)) for c in range(32)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors[:3]
    assert len(results) == 32 * 50
    for (c, r), scores in results.items():
        assert scores == [float(c * 1000 + r * 10 + k) for k in range(3)]
    assert source.scored == 32 * 50 * 3  # every sample scored exactly once
    assert source.calls < 32 * 50  # concurrent requests were micro-batched


def test_server_down_is_a_clear_error_after_retries(no_sleep: list[float]) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    url = f"http://127.0.0.1:{port}"
    remote = client(url, no_sleep, max_attempts=4, backoff_base_s=0.1, backoff_max_s=0.3)
    with pytest.raises(RemoteRewardError, match=rf"{url} failed 4 attempts.*cannot reach"):
        remote.score(samples(["1"]))
    assert (
        len(no_sleep) == 3
    )  # waits between the 4 attempts, full jitter in [0, min(0.3, 0.1 * 2^k)]
    for k, wait in enumerate(no_sleep):
        assert 0 <= wait <= min(0.3, 0.1 * 2**k)
    counted = client(url, no_sleep, max_attempts=2, on_failure="score", failure_score=-1.0)
    result = counted.score(samples(["1", "2"]))
    assert result.scores.tolist() == [-1.0, -1.0] and result.metrics["failures"] == 2


def test_slow_server_times_out() -> None:
    with BackgroundServer(create_app(TextValue(delay_s=1.0))) as server:
        remote = client(server.url, None, timeout_s=0.2, max_attempts=2, backoff_base_s=0.0)
        with pytest.raises(RemoteRewardError, match="failed 2 attempts; last error: timed out"):
            remote.score(samples(["1"]))


def test_500s_are_retried_then_succeed_or_fail(no_sleep: list[float]) -> None:
    flaky = TextValue(fail_first=2)
    with BackgroundServer(create_app(flaky)) as server:
        result = client(server.url, no_sleep, max_attempts=3).score(samples(["5"]))
        assert result.scores.tolist() == [5.0] and result.metrics["retries"] == 2
        broken = TextValue(fail_first=10**6)
        with BackgroundServer(create_app(broken)) as down:
            with pytest.raises(
                RemoteRewardError, match=r"HTTP 500: reward source 'text_value' failed"
            ):
                client(down.url, no_sleep, max_attempts=2).score(samples(["5"]))


def bad_app(scores: object) -> FastAPI:
    app = FastAPI()

    @app.post("/score")
    def score() -> dict[str, object]:
        return {"scores": scores}

    return app


@pytest.mark.parametrize(
    ("scores", "message"),
    [
        ([1.0], "returned 1 scores for 2 samples"),
        ([1.0, "nan"], "non-finite or non-numeric"),
        ([1.0, None], "non-finite or non-numeric"),
        ("x", "no 'scores' list"),
    ],
)
def test_bad_responses_are_clear_errors(scores: object, message: str) -> None:
    with BackgroundServer(bad_app(scores)) as server:
        with pytest.raises(RemoteRewardError, match=message):
            client(server.url).score(samples(["1", "2"]))


def test_nan_response_is_refused() -> None:
    # JSON has no NaN, but Python's json writes and reads the bare token NaN
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            200, content=b'{"scores": [1.0, NaN]}', headers={"content-type": "application/json"}
        )

    remote = client("http://rm.invalid", transport=httpx.MockTransport(handler))
    with pytest.raises(
        RemoteRewardError, match=r"non-finite or non-numeric score nan for sample 1"
    ):
        remote.score(samples(["1", "2"]))


def test_token_and_limits() -> None:
    app = create_app(TextValue(), token="s3cret", max_batch=4, max_request_bytes=4000)
    with BackgroundServer(app) as server:
        body = {"samples": [{"prompt": "p", "response": "1"}]}
        assert httpx.post(f"{server.url}/score", json=body).status_code == 401
        wrong = {"Authorization": "Bearer nope"}
        assert httpx.post(f"{server.url}/score", json=body, headers=wrong).status_code == 401
        ok = {"Authorization": "Bearer s3cret"}
        assert httpx.post(f"{server.url}/score", json=body, headers=ok).json()["scores"] == [1.0]
        with pytest.raises(RemoteRewardError, match="HTTP 401"):
            client(server.url).score(samples(["1"]))  # no retries on 401
        assert client(server.url, token="s3cret").score(samples(["3"])).scores.tolist() == [3.0]
        too_many = {"samples": [{"prompt": "p", "response": "1"}] * 5}
        response = httpx.post(f"{server.url}/score", json=too_many, headers=ok)
        assert response.status_code == 413 and "limit of 4" in response.json()["detail"]
        huge = {"samples": [{"prompt": "p" * 5000, "response": "1"}]}
        assert httpx.post(f"{server.url}/score", json=huge, headers=ok).status_code == 413
        bad = httpx.post(f"{server.url}/score", json={"samples": [{"prompt": 3}]}, headers=ok)
        assert bad.status_code == 422 and "samples.0" in bad.json()["detail"]
