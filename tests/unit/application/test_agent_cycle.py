"""The colocated cycle trains on multi-turn episodes (fakes): the retry task gets solved in
fewer turns, observations never reach the loss, and agent metrics are logged."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import pytest
import torch

from lightrft.adapters.fakes import (
    FakeRetryEnvironment,
    FakeRolloutEngine,
    FakeTurnRenderer,
    synthetic_prompts,
)
from lightrft.adapters.rewards.environment_reward import EnvironmentReward
from lightrft.application.agent_rollout import AgentRolloutEngine
from lightrft.application.cycle import RLCycle
from lightrft.application.experience_maker import ExperienceBatch
from lightrft.application.params import AgentParams, AlgorithmParams, RolloutParams
from lightrft.domain.agent import Action, EnvironmentFactory, StepOutcome
from lightrft.domain.types import SamplingParams
from tests.helpers.fake_cycle import ALGORITHMS, build_rig
from tests.helpers.threads import one_torch_thread


@pytest.fixture(autouse=True)
def _one_thread() -> Iterator[None]:
    yield from one_torch_thread()


def agent_cycle(
    steps: int,
    algorithm: str | AlgorithmParams = "grpo",
    environment: EnvironmentFactory = FakeRetryEnvironment,
) -> RLCycle:
    rig = build_rig(algorithm, total_steps=steps, prompts_per_step=8, n=4, lr=3e-2)
    agent = AgentRolloutEngine(
        FakeRolloutEngine(seed=1),
        environment,
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
    return RLCycle(components, settings)


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


class PenalizedRetries(FakeRetryEnvironment):
    """The retry task with a reward of -0.25 for each wrong turn (a per-turn reward)."""

    def step(self, action: Action) -> StepOutcome:
        outcome = super().step(action)
        return outcome if outcome.done else replace(outcome, reward=-0.25)


def test_turn_credit_gives_each_turn_the_group_normalized_rewards_from_it_on() -> None:
    """grpo with algorithm.turn_credit: the tokens of turn t of episode i get
    (sum_{k >= t} r_{i,k} - mean_j r_j) / (std_j r_j + eps), computed here from the
    episodes' turn rewards, the rewards and the groups, position by position."""
    params = replace(ALGORITHMS["grpo"], turn_credit=True)
    cycle = agent_cycle(1, params, PenalizedRetries)
    batches: list[ExperienceBatch] = []
    annotate = cycle.maker.annotate

    def keep(*args, **kwargs):  # type: ignore[no-untyped-def]
        batches.append(annotate(*args, **kwargs))
        return batches[-1]

    cycle.maker.annotate = keep  # type: ignore[method-assign]
    cycle.run()
    (batch,) = batches
    exp = batch.experience
    rewards, groups = exp.rewards.double(), exp.group_index
    several_turns = 0
    for i, completion in enumerate(batch.completions):
        episode = completion.episode
        assert episode is not None
        peers = rewards[groups == groups[i]]
        if bool((peers == peers[0]).all()):
            assert not exp.advantages[i].any()
            continue
        mean, std = float(peers.mean()), float(peers.std())
        start, rest = 0, float(rewards[i]) - sum(episode.turn_rewards)
        for t, end in enumerate(episode.turn_ends()):
            to_go = sum(episode.turn_rewards[t:]) + rest
            expected = (to_go - mean) / (std + 1e-6)
            trained = exp.sequences.response_mask[i, start : end + 1].bool()
            got = exp.advantages[i, start : end + 1][trained]
            assert torch.allclose(got.double(), torch.full_like(got.double(), expected), atol=1e-5)
            start = end + 1
        several_turns += len(episode.turn_ends()) > 1
    assert several_turns > 0  # the check covered later turns, not only first ones
