"""PythonFunctionReward: values, isolation of exceptions and hangs, worker reuse."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
import structlog
import torch

from lightrft.adapters.rewards import PythonFunctionReward
from lightrft.domain.ports import RewardSource
from lightrft.domain.types import Completion, PromptRecord, RewardSample

# Imported by the worker process, which inherits this process's sys.path.
HELPERS = "tests.unit.adapters.rewards.reward_fn_helpers"


@pytest.fixture
def rewards() -> Iterator[list[PythonFunctionReward]]:
    made: list[PythonFunctionReward] = []
    yield made
    for reward in made:
        reward.close()


def make(made: list[PythonFunctionReward], function: str, **kwargs: object) -> PythonFunctionReward:
    reward = PythonFunctionReward(f"{HELPERS}:{function}", **kwargs)  # type: ignore[arg-type]
    made.append(reward)
    return reward


def sample(response: str, reference: str | None = None, prompt: str = "Q?") -> RewardSample:
    record = PromptRecord(uid="u", prompt_text=prompt, prompt_token_ids=(1,), reference=reference)
    completion = Completion(prompt_index=0, token_ids=(2,), text=response, finish_reason="stop")
    return RewardSample(prompt=record, completion=completion)


def test_values_come_from_the_function(rewards: list[PythonFunctionReward]) -> None:
    reward = make(rewards, "length_ratio")
    assert isinstance(reward, RewardSource)
    assert reward.name == "length_ratio"
    result = reward.score([sample("abcde"), sample("same", reference="same"), sample("")])
    # len("abcde") / 10 = 0.5; equal to the reference -> 1.0; len("") / 10 = 0
    torch.testing.assert_close(result.scores, torch.tensor([0.5, 1.0, 0.0]))
    assert float(result.metrics["failures"]) == 0.0
    assert float(result.metrics["timeouts"]) == 0.0


def test_one_worker_process_is_reused(rewards: list[PythonFunctionReward]) -> None:
    reward = make(rewards, "process_id")
    first = reward.score([sample("a"), sample("b")]).scores
    second = reward.score([sample("c")]).scores
    assert first[0] == first[1] == second[0]
    assert float(first[0]) != 0.0


def test_a_raising_function_gives_the_failure_score(rewards: list[PythonFunctionReward]) -> None:
    reward = make(rewards, "raise_on_request")
    with structlog.testing.capture_logs() as logs:
        result = reward.score([sample("ok"), sample("raise"), sample("ok")])
    (event,) = [e for e in logs if e["event"] == "reward.function.failed"]
    assert "RuntimeError: reward function blew up" in event["error"]
    torch.testing.assert_close(result.scores, torch.tensor([0.25, 0.0, 0.25]))
    assert float(result.metrics["failures"]) == 1.0
    assert float(result.metrics["timeouts"]) == 0.0
    custom = make(rewards, "raise_on_request", failure_score=-1.0)
    assert custom.score([sample("raise")]).scores.tolist() == [-1.0]


def test_a_hanging_function_is_cut_off_and_the_next_call_works(
    rewards: list[PythonFunctionReward],
) -> None:
    reward = make(rewards, "hang_on_request", timeout_seconds=0.5)
    start = time.monotonic()
    with structlog.testing.capture_logs() as logs:
        result = reward.score([sample("hang"), sample("fine")])
    elapsed = time.monotonic() - start
    torch.testing.assert_close(result.scores, torch.tensor([0.0, 0.5]))
    assert float(result.metrics["timeouts"]) == 1.0
    assert float(result.metrics["failures"]) == 1.0
    assert float(result.metrics["worker_restarts"]) == 1.0
    assert elapsed < 10  # the function sleeps 600 s
    # the failed sample, then the call's summary line
    assert [e["event"] for e in logs] == ["reward.function.timeout", "reward.function.failures"]
    assert logs[1]["failed"] == 1 and logs[1]["by_kind"] == {"timeout": 1}
    again = reward.score([sample("fine")])
    assert again.scores.tolist() == [0.5]
    assert float(again.metrics["timeouts"]) == 0.0


def test_a_crashing_worker_is_restarted(rewards: list[PythonFunctionReward]) -> None:
    reward = make(rewards, "exit_on_request")
    result = reward.score([sample("die"), sample("fine")])
    torch.testing.assert_close(result.scores, torch.tensor([0.0, 0.75]))
    assert float(result.metrics["failures"]) == 1.0
    assert float(result.metrics["timeouts"]) == 0.0


def test_non_numeric_values_are_failures(rewards: list[PythonFunctionReward]) -> None:
    reward = make(rewards, "not_a_number")
    result = reward.score([sample("x"), sample("nan")])
    assert result.scores.tolist() == [0.0, 0.0]
    assert float(result.metrics["failures"]) == 2.0


def test_printing_does_not_disturb_the_worker(rewards: list[PythonFunctionReward]) -> None:
    reward = make(rewards, "noisy")
    assert reward.score([sample("a"), sample("b")]).scores.tolist() == [2.0, 2.0]


def test_prompt_response_and_reference_are_passed(rewards: list[PythonFunctionReward]) -> None:
    reward = make(rewards, "length_ratio", name="custom")
    assert reward.name == "custom"
    # The reference decides: equal response -> 1.0 even though it is 7 characters long.
    assert reward.score([sample("exactly", reference="exactly")]).scores.tolist() == [1.0]


@pytest.mark.parametrize(
    "function",
    [f"{HELPERS}:no_such_function", "no_such_module_xyz:f", f"{HELPERS}:NOT_CALLABLE", "nocolon"],
)
def test_a_bad_function_reference_fails_at_construction(function: str) -> None:
    with pytest.raises((ImportError, ValueError)):
        PythonFunctionReward(function)


def test_failure_warnings_are_rate_limited_and_summarized(
    rewards: list[PythonFunctionReward],
) -> None:
    reward = make(rewards, "raise_on_request")
    with structlog.testing.capture_logs() as logs:
        result = reward.score([sample("raise") for _ in range(10)])
    assert float(result.metrics["failures"]) == 10.0
    events = [e["event"] for e in logs]
    # 3 samples logged one by one (the limit), then one summary for all 10
    assert events == ["reward.function.failed"] * 3 + ["reward.function.failures"]
    assert logs[-1]["failed"] == 10 and logs[-1]["not_shown"] == 7
