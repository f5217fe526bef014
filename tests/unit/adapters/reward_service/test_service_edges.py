"""The service edges of issue 46 (EDGE_CASES S10, S17, S18, S20, S21): stalled connections are
closed (headers and body have deadlines), a client leaving mid-body is one log line and no
traceback, and ``unit_tests`` programs of concurrent requests run in parallel, bounded.

On main as of 5ffe8f3: connections that never finished their headers or body were held
forever (uvicorn has no header timeout; the body read had no deadline), a half-sent body
logged ``Exception in ASGI application ... ClientDisconnect`` with its traceback, and the
``unit_tests`` source ran the programs of a batch one after another with the batcher calling
the source one batch at a time (8 looping programs: 8 x timeout_s)."""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Iterator, Sequence

import httpx
import pytest
import torch

from lightrft.adapters.agents.environment_service import EnvironmentService
from lightrft.adapters.agents.environment_service import create_app as environment_app
from lightrft.adapters.reward_service import BackgroundServer, create_app
from lightrft.adapters.reward_service.batcher import MicroBatcher
from lightrft.adapters.rewards.unit_tests import UnitTestsReward, default_parallelism
from lightrft.domain.sandbox import SandboxLimits, SandboxResult
from lightrft.domain.types import Completion, PromptRecord, RewardResult, RewardSample
from tests.helpers.agent_envs import NeverDoneEnvironment

TOKEN = "edge-token"


class Echo:
    """Score = the number in the response."""

    name = "echo"

    def score(self, batch: Sequence[RewardSample]) -> RewardResult:
        return RewardResult(torch.tensor([float(s.completion.text) for s in batch]), {})

    def onload(self) -> None: ...

    def offload(self) -> None: ...


@pytest.fixture
def server() -> Iterator[str]:
    app = create_app(Echo(), token=TOKEN, header_timeout_s=0.5, body_timeout_s=0.5)
    with BackgroundServer(app) as running:
        yield running.url


def connect(url: str) -> socket.socket:
    host, port = url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=5)
    return sock


def closed_within(sock: socket.socket, seconds: float) -> tuple[bool, bytes]:
    """Whether the server closed ``sock`` within ``seconds``, and what it sent first."""
    sock.settimeout(seconds)
    received = b""
    try:
        while chunk := sock.recv(4096):
            received += chunk
    except TimeoutError:
        return False, received
    except ConnectionResetError:
        pass
    return True, received


def live_request(url: str) -> httpx.Response:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    body = {"samples": [{"prompt": "q", "response": "3"}]}
    return httpx.post(f"{url}/score", json=body, headers=headers, timeout=5)


@pytest.mark.parametrize("sent", [b"", b"POST /score HTTP/1.1\r\nHost: x\r\n"])
def test_a_connection_that_never_finishes_its_headers_is_closed(server: str, sent: bytes) -> None:
    """S21 / S17: no token needed to hold a connection; now each is closed after 0.5 s."""
    stalled = [connect(server) for _ in range(20)]
    for sock in stalled:
        sock.sendall(sent)
    started = time.monotonic()
    for sock in stalled:
        closed, _ = closed_within(sock, 5.0)
        assert closed
        sock.close()
    assert time.monotonic() - started < 5.0
    assert live_request(server).json()["scores"] == [3.0]


def test_a_body_that_stalls_gets_408_and_the_connection_is_closed(server: str) -> None:
    """S18: headers complete, then the body stops after 10 of its 100 bytes."""
    sock = connect(server)
    sock.sendall(
        b"POST /score HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        + f"Authorization: Bearer {TOKEN}\r\nContent-Length: 100\r\n\r\n".encode()
        + b'{"samples"'
    )
    closed, answer = closed_within(sock, 5.0)
    sock.close()
    assert closed and answer.startswith(b"HTTP/1.1 408")
    assert b"did not arrive within 0.5s" in answer
    assert live_request(server).status_code == 200


class Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def test_a_client_leaving_mid_body_logs_no_traceback(server: str) -> None:
    """S10: an authenticated, half-sent body, then the client hangs up."""
    handler = Records()
    loggers = [logging.getLogger(name) for name in ("uvicorn.error", "uvicorn", "")]
    for logger in loggers:
        logger.addHandler(handler)
    try:
        for _ in range(3):
            sock = connect(server)
            sock.sendall(
                b"POST /score HTTP/1.1\r\nHost: x\r\n"
                + f"Authorization: Bearer {TOKEN}\r\nContent-Length: 1000\r\n\r\n".encode()
                + b'{"samples": ['
            )
            time.sleep(0.1)
            sock.close()
        time.sleep(0.3)
        assert live_request(server).status_code == 200
    finally:
        for logger in loggers:
            logger.removeHandler(handler)
    failures = [r for r in handler.records if r.exc_info or "Exception in ASGI" in r.getMessage()]
    assert failures == []


def test_the_environment_service_has_the_same_deadlines() -> None:
    app = environment_app(EnvironmentService(NeverDoneEnvironment), header_timeout_s=0.5)
    with BackgroundServer(app) as running:
        sock = connect(running.url)
        sock.sendall(b"POST /reset HTTP/1.1\r\n")
        closed, _ = closed_within(sock, 5.0)
        sock.close()
    assert closed


class SleepingSandbox:
    """A sandbox whose every program 'loops' until its wall limit; counts the overlap."""

    def __init__(self) -> None:
        self.running = 0
        self.most = 0
        self.lock = threading.Lock()

    def run(
        self, program: str, stdin: str = "", limits: SandboxLimits | None = None
    ) -> SandboxResult:
        assert limits is not None
        with self.lock:
            self.running += 1
            self.most = max(self.most, self.running)
        time.sleep(limits.wall_s)
        with self.lock:
            self.running -= 1
        return SandboxResult("timeout", None, "", "", limits.wall_s)


def looping(n: int) -> list[RewardSample]:
    prompt = PromptRecord("p", "q", (1,), reference="assert f() == 1")
    completion = Completion(0, (1,), "while True: pass", "stop")
    return [RewardSample(prompt, completion) for _ in range(n)]


def test_unit_tests_runs_the_programs_of_a_batch_in_parallel_up_to_its_bound() -> None:
    """S20, in training: B looping programs cost B / max_parallel x timeout_s."""
    sandbox = SleepingSandbox()
    source = UnitTestsReward(sandbox, timeout_s=0.3, max_parallel=4)  # type: ignore[arg-type]
    started = time.monotonic()
    result = source.score(looping(8))
    took = time.monotonic() - started
    source.close()
    assert sandbox.most == 4
    assert 0.55 < took < 1.5  # two waves of 0.3 s, not eight
    assert result.scores.tolist() == [0.0] * 8 and float(result.metrics["timeout"]) == 1.0
    assert default_parallelism() >= 1 and UnitTestsReward(sandbox).max_parallel >= 1  # type: ignore[arg-type]


def test_concurrent_requests_share_the_bound_through_the_batcher() -> None:
    """S20, served: 8 one-sample requests, each in its own batch (no merging window)."""
    import asyncio

    sandbox = SleepingSandbox()
    source = UnitTestsReward(sandbox, timeout_s=0.3, max_parallel=4)  # type: ignore[arg-type]

    async def flood() -> float:
        batcher = MicroBatcher(
            source.score, max_samples=1, window_s=0.0, max_concurrent=source.parallel_calls
        )
        batcher.start()
        started = time.monotonic()
        results = await asyncio.gather(*(batcher.submit(looping(1)) for _ in range(8)))
        took = time.monotonic() - started
        await batcher.stop()
        assert [scores for scores, _ in results] == [[0.0]] * 8
        return took

    took = asyncio.run(flood())
    source.close()
    assert sandbox.most == 4 and 0.55 < took < 1.5


def test_a_source_without_parallel_calls_is_still_called_one_batch_at_a_time() -> None:
    import asyncio

    calls = {"now": 0, "most": 0}

    def score(samples: Sequence[RewardSample]) -> RewardResult:
        calls["now"] += 1
        calls["most"] = max(calls["most"], calls["now"])
        time.sleep(0.05)
        calls["now"] -= 1
        return RewardResult(torch.zeros(len(samples)), {})

    async def run() -> None:
        batcher = MicroBatcher(score, max_samples=1, window_s=0.0)
        batcher.start()
        await asyncio.gather(*(batcher.submit(looping(1)) for _ in range(4)))
        await batcher.stop()

    asyncio.run(run())
    assert calls["most"] == 1


def test_a_short_token_on_a_public_address_is_warned_about(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """S11f: ``LIGHTRFT_REWARD_TOKEN=x`` on 0.0.0.0 served without a word on main."""
    from structlog.testing import capture_logs

    from lightrft.entrypoints.jobs.serve_reward import ServeOptions, service_token

    monkeypatch.setenv("LIGHTRFT_REWARD_TOKEN", "x")
    with capture_logs() as logs:
        assert service_token(ServeOptions(host="0.0.0.0")) == "x"
        assert service_token(ServeOptions(host="127.0.0.1")) == "x"  # loopback: no warning
    (warning,) = [e for e in logs if e["event"] == "reward_service.weak_token"]
    assert warning["host"] == "0.0.0.0" and "1 characters" in warning["detail"]
    monkeypatch.setenv("LIGHTRFT_REWARD_TOKEN", "0123456789abcdef")
    with capture_logs() as logs:
        service_token(ServeOptions(host="0.0.0.0"))
    assert not [e for e in logs if e["event"] == "reward_service.weak_token"]


def test_a_request_slower_than_the_header_deadline_is_not_cut() -> None:
    """The header deadline is about headers: scoring that takes longer, and the next request
    on the same kept-alive connection, are answered."""

    class Slow(Echo):
        def score(self, batch: Sequence[RewardSample]) -> RewardResult:
            time.sleep(0.8)
            return super().score(batch)

    app = create_app(Slow(), token=TOKEN, header_timeout_s=0.3, body_timeout_s=0.3)
    headers = {"Authorization": f"Bearer {TOKEN}"}
    body = {"samples": [{"prompt": "q", "response": "3"}]}
    with BackgroundServer(app) as running, httpx.Client(headers=headers, timeout=5) as client:
        for _ in range(2):
            response = client.post(f"{running.url}/score", json=body)
            assert response.status_code == 200 and response.json()["scores"] == [3.0]
