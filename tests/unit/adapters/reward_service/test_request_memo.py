"""A retried reward request is scored once (request_memo.py): the service answers a request
id it has seen (or is still scoring) from that scoring."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from lightrft.adapters.reward_service import BackgroundServer, create_app
from lightrft.adapters.reward_service.protocol import wire_samples
from lightrft.adapters.reward_service.request_memo import RequestMemo
from tests.unit.adapters.reward_service.test_reward_service import TextValue, client, samples


def body(texts: list[str], request_id: str | None) -> bytes:
    payload: dict[str, object] = {"samples": wire_samples(samples(texts))}
    if request_id is not None:
        payload["request_id"] = request_id
    return json.dumps(payload).encode()


def post(url: str, data: bytes) -> list[float]:
    response = httpx.post(f"{url}/score", content=data, timeout=10.0)
    assert response.status_code == 200, response.text
    return list(response.json()["scores"])


def test_the_same_request_twice_is_scored_once_and_answered_alike() -> None:
    source = TextValue()
    with BackgroundServer(create_app(source)) as server:
        first = post(server.url, body(["a 1", "b 2"], "r-1"))
        again = post(server.url, body(["a 1", "b 2"], "r-1"))
        other_samples = post(server.url, body(["a 3"], "r-1"))  # an id reused: new request
        no_id = [post(server.url, body(["c 4"], None)) for _ in range(2)]
    assert first == again == [1.0, 2.0] and other_samples == [3.0] and no_id == [[4.0]] * 2
    assert source.scored == 2 + 1 + 2  # the repeat was not scored; unkeyed ones every time


def test_a_client_that_timed_out_gets_the_first_attempts_scores_on_retry() -> None:
    source = TextValue(delay_s=1.0)  # longer than the client's deadline
    with BackgroundServer(create_app(source, batch_window_s=0.001)) as server:
        remote = client(server.url, timeout_s=0.4, max_attempts=6, backoff_base_s=0.2)
        try:
            result = remote.score(samples(["x 5", "y 6", "z 7"]))
        finally:
            remote.close()
    assert result.scores.tolist() == [5.0, 6.0, 7.0]
    assert float(result.metrics["retries"]) >= 1  # the first attempt really timed out
    assert source.scored == 3  # and its scoring served the retry


def test_failed_scorings_are_not_kept_and_capacity_evicts_the_oldest() -> None:
    async def scenario() -> tuple[list[int], int]:
        memo: RequestMemo[int] = RequestMemo(capacity=2)
        calls = [0]

        async def score() -> int:
            calls[0] += 1
            if calls[0] == 1:
                raise RuntimeError("flaky")
            return calls[0]

        with pytest.raises(RuntimeError):
            await memo.run("a", score)
        answers = [await memo.run("a", score), await memo.run("a", score)]  # kept once it worked
        await memo.run("b", score)
        await memo.run("c", score)  # evicts "a"
        answers.append(await memo.run("a", score))
        return answers, calls[0]

    answers, calls = asyncio.run(scenario())
    assert answers == [2, 2, 5] and calls == 5


def test_concurrent_attempts_of_one_request_share_one_scoring() -> None:
    async def scenario() -> tuple[list[int], int]:
        memo: RequestMemo[int] = RequestMemo()
        calls = [0]

        async def score() -> int:
            calls[0] += 1
            await asyncio.sleep(0.05)
            return 7

        outer = asyncio.ensure_future(memo.run("k", score))
        await asyncio.sleep(0.01)
        outer.cancel()  # the first attempt's client left: the scoring goes on
        answers = await asyncio.gather(*(memo.run("k", score) for _ in range(3)))
        return list(answers), calls[0]

    answers, calls = asyncio.run(scenario())
    assert answers == [7, 7, 7] and calls == 1
