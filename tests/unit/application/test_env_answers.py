"""What an environment answers is untrusted input: a bad answer ends its episode with a
named, counted end reason and never the rollout; an environment failing for most episodes
of several rollouts stops the run naming it (EDGE_CASES HE03, HE10, HE11, HE12, HE13).

Each test fails on main as of 5ffe8f3: there the ids, sizes, rewards and counters were
taken as given (no ``env_invalid`` / ``observation_too_long`` end reasons, no
``EnvironmentFailingError``), a non-PromptRecord reset raised a TypeError out of
``generate``."""

from __future__ import annotations

import math

import pytest

from lightrft.adapters.fakes import FakeRolloutEngine, FakeTurnRenderer, synthetic_prompts, task
from lightrft.application.agent_metrics import MAX_COUNTER_METRICS, episode_metrics
from lightrft.application.agent_rollout import AgentRolloutEngine
from lightrft.application.env_failures import EnvironmentFailingError
from lightrft.application.params import AgentParams
from lightrft.application.reward_failures import RewardSourceFailingError
from lightrft.domain.agent import Action, ChatMessage, StepOutcome
from lightrft.domain.types import Completion, PromptRecord, SamplingParams
from tests.helpers.agent_envs import NeverDoneEnvironment

SAMPLING = SamplingParams(n=2, max_new_tokens=4, seed=3, stop_token_ids=tuple(range(16)))
PARAMS = AgentParams(max_turns=3, vocab_size=task.VOCAB_SIZE, stop_on_env_failures=False)


def prompts(n: int = 2) -> list[PromptRecord]:
    source = synthetic_prompts(n, seed=5)
    return [source[i] for i in range(n)]


class SeenEngine(FakeRolloutEngine):
    """Fails the test if it is ever given an id outside the task's vocabulary."""

    def generate(self, prompts: list[PromptRecord], sampling: SamplingParams) -> list[Completion]:  # type: ignore[override]
        for p in prompts:
            assert all(0 <= t < task.VOCAB_SIZE for t in p.prompt_token_ids), p.prompt_token_ids
        return super().generate(prompts, sampling)


def run(env_class, params: AgentParams = PARAMS, n_prompts: int = 2) -> list[Completion]:  # type: ignore[no-untyped-def]
    agent = AgentRolloutEngine(SeenEngine(), env_class, FakeTurnRenderer(), params)
    return agent.generate(prompts(n_prompts), SAMPLING)


def reasons(completions: list[Completion]) -> list[str]:
    return [c.episode.end_reason for c in completions if c.episode is not None]


class BadIdsEnvironment(NeverDoneEnvironment):
    """HE10: reset answers with ids outside the vocabulary."""

    ids: tuple[int, ...] = (10**9, -5, 3)

    def reset(self, prompt: PromptRecord) -> PromptRecord:
        return PromptRecord(prompt.uid, prompt.prompt_text, self.ids)


@pytest.mark.parametrize("ids", [(10**9, -5, 3), (task.VOCAB_SIZE,), (-1,)])
def test_reset_ids_outside_the_vocabulary_end_the_episode_env_invalid(ids) -> None:  # type: ignore[no-untyped-def]
    env = type("Bad", (BadIdsEnvironment,), {"ids": ids})
    completions = run(env)
    assert reasons(completions) == ["env_invalid"] * 4
    for c in completions:
        assert c.episode is not None and c.episode.turns == 1  # one turn on the prompt itself
        assert c.episode.counters == {"env_invalid_answers": 1.0}
    metrics = episode_metrics(completions)
    assert metrics["agent/end/env_invalid"] == 1.0 and metrics["agent/env_invalid_answers"] == 1.0


def test_a_reset_that_is_not_a_prompt_record_ends_the_episode_not_the_rollout() -> None:
    class WrongType(NeverDoneEnvironment):
        def reset(self, prompt: PromptRecord) -> PromptRecord:
            return "hello"  # type: ignore[return-value]

    assert reasons(run(WrongType)) == ["env_invalid"] * 4


def test_a_reset_adding_more_than_max_observation_tokens_is_refused() -> None:
    class Longer(NeverDoneEnvironment):
        def reset(self, prompt: PromptRecord) -> PromptRecord:
            ids = prompt.prompt_token_ids + (task.EQUALS_ID,) * 9
            return PromptRecord(prompt.uid, prompt.prompt_text, ids)

    params = AgentParams(max_turns=2, vocab_size=task.VOCAB_SIZE, max_observation_tokens=8)
    assert reasons(run(Longer, params)) == ["env_invalid"] * 4
    params = AgentParams(max_turns=2, vocab_size=task.VOCAB_SIZE, max_observation_tokens=9)
    assert "env_invalid" not in reasons(run(Longer, params))


class HugeObservation(NeverDoneEnvironment):
    """HE11: a 5 MB observation (digits, so the fake renderer would render every one)."""

    def step(self, action: Action) -> StepOutcome:
        return StepOutcome((ChatMessage("tool", "1" * 5_000_000),))


def test_a_huge_observation_ends_the_episode_before_it_is_rendered() -> None:
    renderer = FakeTurnRenderer()
    agent = AgentRolloutEngine(SeenEngine(), HugeObservation, renderer, PARAMS)
    completions = agent.generate(prompts(), SAMPLING)
    assert reasons(completions) == ["observation_too_long"] * 4
    assert renderer.rendered == 0  # never tokenised
    for c in completions:
        assert c.episode is not None and c.episode.turns == 1 and len(c.token_ids) <= 4


def test_an_observation_rendering_to_more_than_max_observation_tokens_ends_the_episode() -> None:
    class Fifty(NeverDoneEnvironment):
        def step(self, action: Action) -> StepOutcome:
            return StepOutcome((ChatMessage("tool", "1" * 50),))  # 50 chars: under 32 x 8

    params = AgentParams(max_turns=3, vocab_size=task.VOCAB_SIZE, max_observation_tokens=8)
    assert reasons(run(Fifty, params)) == ["observation_too_long"] * 4
    params = AgentParams(max_turns=3, vocab_size=task.VOCAB_SIZE, max_observation_tokens=60)
    assert "observation_too_long" not in reasons(run(Fifty, params))


def test_the_default_episode_is_bounded_by_turns_new_tokens_and_observations() -> None:
    class Long(NeverDoneEnvironment):
        def step(self, action: Action) -> StepOutcome:
            return StepOutcome((ChatMessage("tool", "1" * 4000),))

    params = AgentParams(max_turns=3, vocab_size=task.VOCAB_SIZE)  # max_response_tokens=None
    for c in run(Long, params):
        bound = params.max_turns * (SAMPLING.max_new_tokens + params.max_observation_tokens)
        assert len(c.token_ids) <= bound


class Rewards(NeverDoneEnvironment):
    """HE13: ``reward`` on every turn."""

    reward = 1e308

    def step(self, action: Action) -> StepOutcome:
        return StepOutcome((ChatMessage("tool", "1"),), reward=self.reward)


@pytest.mark.parametrize("reward", [1e308, math.inf, -math.inf, math.nan, 2e6])
def test_a_non_finite_or_absurd_reward_ends_the_episode_and_is_not_summed(reward: float) -> None:
    completions = run(type("R", (Rewards,), {"reward": reward}))
    assert reasons(completions) == ["env_invalid"] * 4
    for c in completions:
        assert c.episode is not None and c.episode.turn_rewards == ()
        assert c.episode.reward == 0.0
    assert math.isfinite(episode_metrics(completions)["agent/env_reward_mean"])


def test_a_reward_within_max_abs_reward_is_kept() -> None:
    completions = run(type("R", (Rewards,), {"reward": -1e6}))
    assert reasons(completions) == ["max_turns"] * 4
    assert all(c.episode is not None and c.episode.reward == -3e6 for c in completions)


class ManyCounters(NeverDoneEnvironment):
    """HE12: 20,000 counter names in one answer."""

    def step(self, action: Action) -> StepOutcome:
        counters = {f"c{i}": 1.0 for i in range(20_000)}
        return StepOutcome((ChatMessage("tool", "1"),), counters=counters)


def test_twenty_thousand_counter_names_end_the_episode_and_stay_out_of_the_metrics() -> None:
    completions = run(ManyCounters)
    assert reasons(completions) == ["env_invalid"] * 4
    metrics = episode_metrics(completions)
    assert len(metrics) < 30 and "agent/c0" not in metrics


def test_counters_adding_up_past_max_counter_keys_over_turns_end_the_episode() -> None:
    class NewNameEachTurn(NeverDoneEnvironment):
        turn = 0

        def step(self, action: Action) -> StepOutcome:
            self.turn += 1
            return StepOutcome((ChatMessage("tool", "1"),), counters={f"k{self.turn}": 1.0})

    params = AgentParams(max_turns=5, vocab_size=task.VOCAB_SIZE, max_counter_keys=2)
    for c in run(NewNameEachTurn, params):
        assert c.episode is not None and c.episode.end_reason == "env_invalid"
        assert c.episode.turns == 3 and set(c.episode.counters) == {
            "k1",
            "k2",
            "env_invalid_answers",
        }


def test_a_non_finite_counter_ends_the_episode() -> None:
    class NanCounter(NeverDoneEnvironment):
        def step(self, action: Action) -> StepOutcome:
            return StepOutcome((ChatMessage("tool", "1"),), counters={"x": math.nan})

    assert reasons(run(NanCounter)) == ["env_invalid"] * 4


def test_step_metrics_hold_at_most_max_counter_metrics_names() -> None:
    class Named(NeverDoneEnvironment):
        def step(self, action: Action) -> StepOutcome:  # a new name in every episode
            return StepOutcome((), done=True, counters={f"n{id(self)}": 1.0, "shared": 1.0})

    completions = run(Named, n_prompts=200)
    metrics = episode_metrics(completions)
    counters = [k for k in metrics if k.startswith("agent/n") or k == "agent/shared"]
    assert len(counters) == MAX_COUNTER_METRICS and "agent/shared" in counters
    assert metrics["agent/counter_names_dropped"] == 400 + 1 - MAX_COUNTER_METRICS


class Down(NeverDoneEnvironment):
    """HE03: every call fails."""

    def reset(self, prompt: PromptRecord) -> PromptRecord:
        raise ConnectionError("cannot reach it")


def test_an_environment_down_for_patience_rollouts_stops_the_run_naming_it() -> None:
    params = AgentParams(max_turns=2, environment="environment service http://127.0.0.1:9")
    agent = AgentRolloutEngine(FakeRolloutEngine(), Down, FakeTurnRenderer(), params)
    for _ in range(params.env_failure_patience - 1):
        assert reasons(agent.generate(prompts(), SAMPLING)) == ["env_error"] * 4
    with pytest.raises(EnvironmentFailingError) as info:
        agent.generate(prompts(), SAMPLING)
    message = str(info.value)
    assert "environment service http://127.0.0.1:9" in message and "100%" in message
    assert "3 consecutive rollouts" in message and "\n" not in message
    assert isinstance(info.value, RewardSourceFailingError)  # the cycle checkpoints and stops


def test_a_good_rollout_resets_the_streak_and_the_policy_can_be_disabled() -> None:
    class Flaky(NeverDoneEnvironment):
        broken = True

        def reset(self, prompt: PromptRecord) -> PromptRecord:
            if Flaky.broken:
                raise ConnectionError("down")
            return prompt

    params = AgentParams(max_turns=2, env_failure_patience=2)
    agent = AgentRolloutEngine(FakeRolloutEngine(), Flaky, FakeTurnRenderer(), params)
    agent.generate(prompts(), SAMPLING)
    Flaky.broken = False
    agent.generate(prompts(), SAMPLING)
    Flaky.broken = True
    agent.generate(prompts(), SAMPLING)  # streak 1 again, not 2
    with pytest.raises(EnvironmentFailingError):
        agent.generate(prompts(), SAMPLING)
    off = AgentRolloutEngine(
        FakeRolloutEngine(), Down, FakeTurnRenderer(), AgentParams(stop_on_env_failures=False)
    )
    for _ in range(5):
        off.generate(prompts(), SAMPLING)


def test_below_the_threshold_the_run_goes_on() -> None:
    class HalfDown(NeverDoneEnvironment):
        def reset(self, prompt: PromptRecord) -> PromptRecord:
            if prompt.uid.endswith("0") or prompt.uid.endswith("2"):
                raise ConnectionError("down")
            return prompt

    params = AgentParams(max_turns=2, env_failure_threshold=0.9, env_failure_patience=1)
    agent = AgentRolloutEngine(FakeRolloutEngine(), HalfDown, FakeTurnRenderer(), params)
    completions = agent.generate(prompts(4), SAMPLING)
    assert 0 < reasons(completions).count("env_error") < len(completions)


@pytest.mark.parametrize(
    "outcome",
    [
        "not an outcome",
        StepOutcome(("a bare string",)),  # type: ignore[arg-type]
        StepOutcome((ChatMessage("tool", None),)),  # type: ignore[arg-type]
        StepOutcome((), done="yes"),  # type: ignore[arg-type]
    ],
)
def test_a_malformed_step_answer_ends_the_episode_not_the_rollout(outcome: object) -> None:
    class Malformed(NeverDoneEnvironment):
        def step(self, action: Action) -> StepOutcome:
            return outcome  # type: ignore[return-value]

    assert reasons(run(Malformed)) == ["env_invalid"] * 4
