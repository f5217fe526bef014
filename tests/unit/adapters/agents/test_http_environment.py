"""The HTTP environment: protocol round trip, retries with deadlines, idempotent steps, and
failures that end one episode (counted) instead of the rollout."""

from __future__ import annotations

import json
import time
from collections.abc import Callable

import httpx
import pytest

from lightrft.adapters.agents.environment_service import (
    EnvironmentService,
    ServiceError,
    create_app,
)
from lightrft.adapters.agents.http_environment import (
    EnvironmentUnavailableError,
    HttpEnvironments,
)
from lightrft.adapters.fakes import (
    FakeRetryEnvironment,
    FakeRolloutEngine,
    FakeTurnRenderer,
    synthetic_prompts,
)
from lightrft.adapters.http_client.retry import RetryPolicy
from lightrft.application.agent_rollout import AgentRolloutEngine
from lightrft.application.params import AgentParams
from lightrft.domain.agent import Action, Environment
from lightrft.domain.types import SamplingParams

FAST = RetryPolicy(max_attempts=3, backoff_base_s=0.0, backoff_max_s=0.0)


def transport(service: EnvironmentService, fault: Callable[[str, int], httpx.Response | None]):  # type: ignore[no-untyped-def]
    """Routes requests to ``service``; ``fault(verb, call number)`` may answer instead."""
    calls = {"n": 0}

    def handler(request: httpx.Request) -> httpx.Response:
        calls["n"] += 1
        verb = request.url.path.strip("/")
        injected = fault(verb, calls["n"])
        if injected is not None:
            return injected
        try:
            return httpx.Response(200, json=service.handle(verb, json.loads(request.content)))
        except ServiceError as error:
            return httpx.Response(error.status, json={"detail": error.detail})

    return httpx.MockTransport(handler), calls


def no_fault(verb: str, n: int) -> None:
    return None


def envs(service: EnvironmentService, fault=no_fault) -> HttpEnvironments:  # type: ignore[no-untyped-def]
    mock, _ = transport(service, fault)
    return HttpEnvironments("http://env.test", retry=FAST, transport=mock, timeout_s=1.0)


def test_round_trip_reset_step_close() -> None:
    server_side: list[FakeRetryEnvironment] = []

    def factory() -> FakeRetryEnvironment:
        server_side.append(FakeRetryEnvironment())
        return server_side[-1]

    env = envs(EnvironmentService(factory))()
    assert isinstance(env, Environment)
    prompt = synthetic_prompts(1)[0]
    assert env.reset(prompt) == prompt
    out = env.step(Action((4,), "1", "stop"))
    assert server_side[0].steps == 1
    assert out.counters["http/requests"] == 2 and out.counters["http/retries"] == 0
    assert out.done == (out.reward == 1.0)
    env.close()
    assert server_side[0].closed


def test_transient_failures_are_retried_and_a_retried_step_is_applied_once() -> None:
    service = EnvironmentService(FakeRetryEnvironment)
    step_calls = {"n": 0}

    def fault(verb: str, n: int) -> httpx.Response | None:
        if verb == "step":
            step_calls["n"] += 1
            if step_calls["n"] == 1:
                return httpx.Response(503, json={"detail": "busy"})
            if step_calls["n"] == 2:
                raise httpx.ReadTimeout("slow")
        return None

    env = envs(service, fault)()
    env.reset(synthetic_prompts(1)[0])
    out = env.step(Action((4,), "1", "stop"))
    assert out.counters["http/retries"] == 2
    # the same turn again (a client retry after a lost answer) gets the stored answer
    episode = next(iter(service._episodes.values()))
    assert episode[0].steps == 1  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("fault", "message"),
    [
        (lambda v, n: httpx.Response(503, json={"detail": "down"}), "failed 3 attempts"),
        (lambda v, n: httpx.Response(401, json={"detail": "no"}), "refused the request: HTTP 401"),
        (lambda v, n: httpx.Response(200, content=b"<html>"), "not JSON"),
    ],
)
def test_failures_for_good_are_typed_errors_naming_the_service(fault, message: str) -> None:  # type: ignore[no-untyped-def]
    env = envs(EnvironmentService(FakeRetryEnvironment), fault)()
    with pytest.raises(EnvironmentUnavailableError, match=message) as info:
        env.reset(synthetic_prompts(1)[0])
    assert "environment service http://env.test" in str(info.value)


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        ({"reward": "1", "done": True}, "finite number"),
        ({"reward": 1.0}, "boolean 'done'"),
        ({"reward": 1.0, "done": False, "observation": [{"role": 3}]}, "list of messages"),
        ({"reward": float("nan"), "done": True}, "finite number"),
    ],
)
def test_malformed_step_answers_are_refused(answer: dict[str, object], message: str) -> None:
    def fault(verb: str, n: int) -> httpx.Response | None:
        if verb == "step":
            return httpx.Response(200, content=json.dumps(answer).encode())
        return None

    env = envs(EnvironmentService(FakeRetryEnvironment), fault)()
    env.reset(synthetic_prompts(1)[0])
    with pytest.raises(EnvironmentUnavailableError, match=message):
        env.step(Action((4,), "1", "stop"))


def test_a_dead_service_ends_episodes_counted_never_the_rollout() -> None:
    def down(verb: str, n: int) -> httpx.Response:
        return httpx.Response(503, json={"detail": "down"})

    agent = AgentRolloutEngine(
        FakeRolloutEngine(),
        envs(EnvironmentService(FakeRetryEnvironment), down),
        FakeTurnRenderer(),
        AgentParams(max_turns=3),
    )
    prompts = [synthetic_prompts(2)[i] for i in range(2)]
    completions = agent.generate(prompts, SamplingParams(n=2, max_new_tokens=2, seed=0))
    assert len(completions) == 4
    for c in completions:
        assert c.episode is not None and c.episode.end_reason == "env_error"
        assert c.episode.counters == {"env_errors": 1.0} and c.episode.turns == 1


def test_multi_turn_episodes_through_http_match_the_local_environment() -> None:
    prompts = [synthetic_prompts(3, seed=2)[i] for i in range(3)]
    sampling = SamplingParams(n=2, max_new_tokens=1, seed=4, temperature=2.0)
    params = AgentParams(max_turns=4, straggler_wait_s=0.0)
    remote = AgentRolloutEngine(
        FakeRolloutEngine(),
        envs(EnvironmentService(FakeRetryEnvironment)),
        FakeTurnRenderer(),
        params,
    ).generate(prompts, sampling)
    local = AgentRolloutEngine(
        FakeRolloutEngine(), FakeRetryEnvironment, FakeTurnRenderer(), params
    ).generate(prompts, sampling)
    assert [c.token_ids for c in remote] == [c.token_ids for c in local]
    assert [c.episode.reward for c in remote if c.episode] == [
        c.episode.reward for c in local if c.episode
    ]


def test_the_starlette_app_serves_the_protocol() -> None:
    from starlette.testclient import TestClient

    client = TestClient(create_app(EnvironmentService(FakeRetryEnvironment)))
    prompt = synthetic_prompts(1)[0]
    from lightrft.adapters.agents.http_wire import prompt_to_wire

    assert (
        client.post("/reset", json={"episode": "e", "prompt": prompt_to_wire(prompt)}).status_code
        == 200
    )
    step = {
        "episode": "e",
        "turn": 0,
        "action": {"token_ids": [4], "text": "1", "finish_reason": "stop"},
    }
    assert set(client.post("/step", json=step).json()) == {
        "observation",
        "reward",
        "done",
        "counters",
    }
    assert client.post("/step", json={**step, "episode": "x"}).status_code == 404
    assert client.post("/nope", json={"episode": "e"}).status_code == 404
    assert client.post("/step", content=b"{").status_code == 400
    started = time.monotonic()
    assert client.post("/close", json={"episode": "e"}).json() == {}
    assert time.monotonic() - started < 5


def test_the_service_answers_a_repeated_turn_without_stepping_again() -> None:
    from lightrft.adapters.agents.http_wire import prompt_to_wire

    made: list[FakeRetryEnvironment] = []
    service = EnvironmentService(lambda: made.append(FakeRetryEnvironment()) or made[-1])
    service.handle("reset", {"episode": "e", "prompt": prompt_to_wire(synthetic_prompts(1)[0])})
    step = {
        "episode": "e",
        "turn": 0,
        "action": {"token_ids": [4], "text": "1", "finish_reason": "stop"},
    }
    first = service.handle("step", step)
    assert service.handle("step", step) == first and made[0].steps == 1
    service.handle("step", {**step, "turn": 1})
    assert made[0].steps == 2


def test_the_starlette_app_refuses_requests_without_its_token() -> None:
    from starlette.testclient import TestClient

    from lightrft.adapters.agents.http_wire import prompt_to_wire

    app = create_app(
        EnvironmentService(FakeRetryEnvironment), token="s3cret", max_request_bytes=4096
    )
    client = TestClient(app)
    body = {"episode": "e", "prompt": prompt_to_wire(synthetic_prompts(1)[0])}
    assert client.post("/reset", json=body).status_code == 401
    assert (
        client.post("/reset", json=body, headers={"Authorization": "Bearer wrong"}).status_code
        == 401
    )
    good = {"Authorization": "Bearer s3cret"}
    assert client.post("/reset", json=body, headers=good).status_code == 200
    big = {**good, "Content-Type": "application/json"}
    assert client.post("/reset", content=b"x" * 5000, headers=big).status_code == 413


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.5", "env.example.org"])
def test_serving_an_environment_where_others_can_reach_it_needs_a_token(host: str) -> None:
    from lightrft.adapters.agents.environment_service import serve
    from lightrft.adapters.service_access import BackgroundServer, ServiceExposureError

    open_app = create_app(EnvironmentService(FakeRetryEnvironment))
    with pytest.raises(ServiceExposureError, match=f"refusing to serve on {host} without"):
        serve(open_app, host=host, port=1)  # refused before anything binds
    with pytest.raises(ServiceExposureError):
        BackgroundServer(open_app, host=host)
    # with a token the check passes (the server is built, not started: nothing binds here)
    BackgroundServer(create_app(EnvironmentService(FakeRetryEnvironment), token="t"), host=host)


def test_a_served_environment_on_loopback_answers_the_http_client() -> None:
    from lightrft.adapters.service_access import BackgroundServer

    app = create_app(EnvironmentService(FakeRetryEnvironment), token="s3cret")
    with BackgroundServer(app) as server:
        env = HttpEnvironments(server.url, token="s3cret", retry=FAST, timeout_s=5.0)()
        prompt = synthetic_prompts(1)[0]
        assert env.reset(prompt) == prompt
        assert env.step(Action((4,), "1", "stop")).counters["http/requests"] == 2
        env.close()
