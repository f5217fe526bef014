"""The colocated cycle trains on multi-turn episodes (fakes): the retry task gets solved in
fewer turns, observations never reach the loss, and agent metrics are logged."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import pytest

from lightrft.adapters.fakes import (
    FakeRetryEnvironment,
    FakeRolloutEngine,
    FakeTurnRenderer,
    synthetic_prompts,
)
from lightrft.adapters.rewards.environment_reward import EnvironmentReward
from lightrft.application.agent_rollout import AgentRolloutEngine
from lightrft.application.cycle import ColocatedRLCycle
from lightrft.application.params import AgentParams, RolloutParams
from lightrft.domain.types import SamplingParams
from tests.helpers.fake_cycle import build_rig
from tests.helpers.threads import one_torch_thread


@pytest.fixture(autouse=True)
def _one_thread() -> Iterator[None]:
    yield from one_torch_thread()


def agent_cycle(steps: int, algorithm: str = "grpo") -> ColocatedRLCycle:
    rig = build_rig(algorithm, total_steps=steps, prompts_per_step=8, n=4, lr=3e-2)
    agent = AgentRolloutEngine(
        FakeRolloutEngine(seed=1),
        FakeRetryEnvironment,
        FakeTurnRenderer(),
        AgentParams(max_turns=3, straggler_wait_s=0.0),
    )
    components = replace(
        rig.cycle.components,
        engine=agent,
        reward_sources=[EnvironmentReward()],
        eval_prompts=synthetic_prompts(32, seed=99),
    )
    settings = replace(
        rig.cycle.settings,
        rollout=RolloutParams(
            prompts_per_step=8, sampling=SamplingParams(n=4, max_new_tokens=2, temperature=1.0)
        ),
        shaping=replace(rig.cycle.settings.shaping, weights={}),
        cycle=replace(rig.cycle.settings.cycle, eval_every=steps),
    )
    return ColocatedRLCycle(components, settings)


def test_multi_turn_grpo_learns_the_retry_task_and_logs_agent_metrics() -> None:
    cycle = agent_cycle(40)
    history = cycle.run()
    first, last = history[0], history[-1]
    assert "agent/turns_mean" in first and "agent/end/done" in first
    early = sum(h["reward/mean"] for h in history[:5]) / 5
    late = sum(h["reward/mean"] for h in history[-5:]) / 5
    assert late > early + 0.3, (early, late)
    assert last["agent/end/done"] > first["agent/end/done"] + 0.3
    # the policy learnt to close its turns, reached later turns, then needed fewer of them
    peak = max(h["agent/turns_mean"] for h in history)
    assert max(h["agent/observation_tokens_mean"] for h in history) > 0
    assert last["agent/turns_mean"] < peak


@pytest.mark.parametrize("algorithm", ["reinforce_pp", "gae", "gspo"])
def test_token_level_estimators_and_sequence_losses_run_on_multi_turn_rows(algorithm: str) -> None:
    history = agent_cycle(2, algorithm).run()
    assert all(h["agent/episodes"] == 32 for h in history)


def test_evaluation_reports_agent_metrics_and_the_tool_use_rate() -> None:
    from lightrft.application.evaluator import Evaluator
    from tests.helpers.agent_envs import NeverDoneEnvironment

    prompts = synthetic_prompts(6, seed=3)
    one_token = SamplingParams(n=2, max_new_tokens=3, seed=0, stop_token_ids=tuple(range(16)))
    for factory, rate in ((NeverDoneEnvironment, 1.0), (FakeRetryEnvironment, 0.0)):
        agent = AgentRolloutEngine(
            FakeRolloutEngine(), factory, FakeTurnRenderer(), AgentParams(max_turns=2)
        )
        metrics = Evaluator(agent, [EnvironmentReward()], batch_size=4).evaluate(prompts, one_token)
        assert metrics["eval/agent/tool_use_rate"] == rate
        assert 1.0 <= metrics["eval/agent/turns_mean"] <= 2.0
        assert metrics["eval/reward_mean"] == pytest.approx(
            metrics["eval/reward/environment/episode_reward_mean"]
        )
