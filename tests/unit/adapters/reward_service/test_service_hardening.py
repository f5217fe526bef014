"""The reward service under abuse (issue 31): chunked bodies past the size limit, clients that
leave before scoring, one bad sample merged with good ones, serving without a token, and the
client's metrics when a request fails for good."""

from __future__ import annotations

import socket
import threading
import time
import tracemalloc
from collections.abc import Iterator, Sequence

import httpx
import pytest
import torch

from lightrft.adapters.reward_models import HfScalarRewardModel
from lightrft.adapters.reward_service import BackgroundServer, RemoteRewardSource, create_app
from lightrft.adapters.service_access import ServiceExposureError, is_loopback
from lightrft.domain.types import Completion, PromptRecord, RewardResult, RewardSample
from tests.unit.adapters.hf.hf_tiny import tiny_tokenizer
from tests.unit.adapters.reward_models.rm_tiny import tiny_classifier


def wire(text: str, prompt: str = "q: ") -> dict[str, object]:
    return {"samples": [{"prompt": prompt, "response": text}]}


class Recording:
    """Score = the number in the response; remembers every text it scored."""

    name = "recording"

    def __init__(self, delay_s: float = 0.0) -> None:
        self.delay_s = delay_s
        self.texts: list[str] = []

    def score(self, batch: Sequence[RewardSample]) -> RewardResult:
        time.sleep(self.delay_s)
        self.texts += [s.completion.text for s in batch]
        return RewardResult(torch.tensor([float(s.completion.text) for s in batch]), {})

    def onload(self) -> None: ...

    def offload(self) -> None: ...


@pytest.fixture
def slow_server() -> Iterator[tuple[str, Recording, object]]:
    source = Recording(delay_s=1.0)
    app = create_app(source, batch_window_s=0.001, max_request_bytes=64 * 1024)
    with BackgroundServer(app) as server:
        yield server.url, source, app.state.batcher


def test_chunked_body_is_cut_at_the_limit(slow_server: tuple[str, Recording, object]) -> None:
    url = slow_server[0]
    sent = 0
    tracemalloc.start()

    def body() -> Iterator[bytes]:  # no Content-Length: chunked transfer encoding
        nonlocal sent
        for _ in range(2048):  # up to 128 MiB
            sent += 65536
            yield b" " * 65536

    try:
        response = httpx.post(f"{url}/score", content=body(), timeout=30)
        assert response.status_code == 413
    except httpx.TransportError:
        pass  # the server answered 413 and closed while we were still sending
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    # the server (this process) held at most the limit plus a few chunks, never the body
    assert peak < 16 * 2**20, f"peak {peak / 2**20:.0f} MiB after {sent / 2**20:.0f} MiB sent"
    small = httpx.post(f"{url}/score", content=iter([b"x" * 70000]), timeout=30)
    assert small.status_code == 413


def test_abandoned_request_is_not_scored(slow_server: tuple[str, Recording, object]) -> None:
    url, source, batcher = slow_server
    first: list[httpx.Response] = []
    worker = threading.Thread(
        target=lambda: first.append(httpx.post(f"{url}/score", json=wire("1"), timeout=30))
    )
    worker.start()
    time.sleep(0.3)  # the first request is being scored (1 s); the next one waits in the queue
    with pytest.raises(httpx.ReadTimeout):
        httpx.post(f"{url}/score", json=wire("999"), timeout=0.3)  # the client gives up
    worker.join(30)
    stats = batcher.stats  # type: ignore[attr-defined]
    deadline = time.monotonic() + 5  # the left request would be scored within ~1 s
    while getattr(stats, "abandoned", 0) < 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert first[0].json()["scores"] == [1.0]
    assert source.texts == ["1"]  # "999" was never scored
    assert stats.abandoned == 1


def test_a_bad_sample_fails_only_its_own_request() -> None:
    rm = HfScalarRewardModel(tiny_classifier(seed=4), tiny_tokenizer(), torch.device("cpu"))
    texts = [f"answer {k}" for k in range(8)]
    expected = [  # each alone, as the server scores them after the merged batch failed
        rm.score(
            [RewardSample(PromptRecord("u", "q: ", (0,)), Completion(0, (), t, "stop"))]
        ).scores.tolist()[0]
        for t in texts
    ]
    app = create_app(rm, batch_window_s=0.5)  # the nine requests land in one batch
    responses: dict[int, httpx.Response] = {}
    with BackgroundServer(app) as server:

        def send(k: int) -> None:
            body = wire("", prompt="") if k == 8 else wire(texts[k])  # 8: no tokens at all
            responses[k] = httpx.post(f"{server.url}/score", json=body, timeout=30)

        threads = [threading.Thread(target=send, args=(k,)) for k in range(9)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
    bad = responses[8]
    assert bad.status_code == 422 and "pair 0 has no tokens" in bad.json()["detail"]
    for k in range(8):
        assert responses[k].status_code == 200
        # approx: under load a request can miss the window and share a batch with other
        # good ones (another padding width: float noise of about 1e-6)
        assert responses[k].json()["scores"] == [pytest.approx(expected[k], rel=1e-5)]
    assert app.state.batcher.stats.isolated == 1  # they were merged, then scored apart


def test_failed_requests_count_in_the_client_metrics() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens there
    down = RemoteRewardSource(
        f"http://127.0.0.1:{port}",
        max_attempts=3,
        on_failure="score",
        request_batch=2,
        sleep=lambda _: None,
    )
    batch = [RewardSample(PromptRecord("u", "q", (1,)), Completion(0, (2,), "1", "stop"))] * 3
    metrics = down.score(batch).metrics
    # two requests (2 + 1 samples), three attempts each
    assert (metrics["requests"], metrics["retries"], metrics["failures"]) == (2, 4, 3)
    with BackgroundServer(create_app(Recording(), max_batch=1)) as server:
        refused = RemoteRewardSource(server.url, on_failure="score", sleep=lambda _: None)
        metrics = refused.score(batch).metrics  # 413: not retried
    assert (metrics["requests"], metrics["retries"], metrics["failures"]) == (1, 0, 3)


@pytest.mark.parametrize(
    ("host", "loopback"),
    [("127.0.0.1", True), ("127.8.0.1", True), ("::1", True), ("[::1]", True)]
    + [("localhost", True), ("0.0.0.0", False), ("::", False), ("10.0.0.5", False)]
    + [("example.org", False)],
)
def test_loopback(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_non_loopback_needs_a_token() -> None:
    with pytest.raises(ServiceExposureError, match="refusing to serve on 0.0.0.0 without a"):
        BackgroundServer(create_app(Recording()), host="0.0.0.0")
    BackgroundServer(create_app(Recording(), token="t"), host="0.0.0.0")  # allowed, not started
