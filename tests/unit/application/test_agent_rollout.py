"""AgentRolloutEngine: multi-turn episodes over a fake engine and fake environments."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

import pytest

from lightrft.adapters.fakes import (
    FakeRetryEnvironment,
    FakeRolloutEngine,
    FakeTurnRenderer,
    synthetic_prompts,
    task,
)
from lightrft.application.agent_rollout import AgentRolloutEngine
from lightrft.application.params import AgentParams
from lightrft.domain.agent import Action, StepOutcome
from lightrft.domain.types import Completion, PromptRecord, SamplingParams
from tests.helpers.agent_envs import (
    FailingEnvironment,
    HangingEnvironment,
    NeverDoneEnvironment,
    SlowEnvironment,
)

SAMPLING = SamplingParams(n=2, max_new_tokens=4, seed=3)
ONE_TOKEN_TURNS = SamplingParams(n=2, max_new_tokens=4, seed=3, stop_token_ids=tuple(range(16)))


class RecordingEngine(FakeRolloutEngine):
    """Records every request's prompt ids and the completions it returned."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[list[tuple[str, tuple[int, ...], tuple[int, ...]]]] = []

    def generate(
        self, prompts: Sequence[PromptRecord], sampling: SamplingParams
    ) -> list[Completion]:
        out = super().generate(prompts, sampling)
        self.calls.append(
            [(p.uid, p.prompt_token_ids, c.token_ids) for p, c in zip(prompts, out, strict=True)]
        )
        return out


def prompts(n: int = 4) -> list[PromptRecord]:
    source = synthetic_prompts(n, seed=5)
    return [source[i] for i in range(n)]


def rollout(env_factory, params: AgentParams, engine=None) -> AgentRolloutEngine:  # type: ignore[no-untyped-def]
    return AgentRolloutEngine(engine or RecordingEngine(), env_factory, FakeTurnRenderer(), params)


def test_trajectory_ids_are_the_generated_and_rendered_ids_and_the_mask_marks_generated() -> None:
    engine = RecordingEngine()
    agent = rollout(NeverDoneEnvironment, AgentParams(max_turns=3), engine)
    batch = prompts()
    completions = agent.generate(batch, SAMPLING)
    assert [c.prompt_index for c in completions] == [0, 0, 1, 1, 2, 2, 3, 3]
    generated = {uid: ids for call in engine.calls for uid, _, ids in call}
    inputs = {uid: ids for call in engine.calls for uid, ids, _ in call}
    for row, c in enumerate(completions):
        episode = c.episode
        assert episode is not None
        assert c.token_ids == episode.token_ids and c.loss_mask == episode.loss_mask
        prompt = batch[c.prompt_index]
        turns = [(seg, start) for seg, start in _starts(episode.segments) if seg.trained]
        for turn, (segment, start) in enumerate(turns):
            uid = f"{prompt.uid}/sample{row % 2}/turn{turn}"
            assert generated[uid] == segment.token_ids  # kept exactly as generated
            # the turn's input is the prompt plus every token before it in the response
            assert inputs[uid] == prompt.prompt_token_ids + c.token_ids[:start]
        for segment, start in _starts(episode.segments):
            mask = c.loss_mask[start : start + len(segment.token_ids)]
            assert set(mask) == ({1} if segment.trained else {0})
            if not segment.trained:
                assert c.logprobs is not None
                assert set(c.logprobs[start : start + len(segment.token_ids)]) == {0.0}
        assert c.text == episode.segments[-1].text


def _starts(segments):  # type: ignore[no-untyped-def]
    start = 0
    for s in segments:
        yield s, start
        start += len(s.token_ids)


def test_observation_closes_a_turn_the_model_left_open() -> None:
    completions = rollout(NeverDoneEnvironment, AgentParams(max_turns=3)).generate(
        prompts(), SamplingParams(n=2, max_new_tokens=4, seed=3, stop_token_ids=(task.EQUALS_ID,))
    )
    for c in completions:
        assert c.episode is not None
        segs = c.episode.segments
        for before, obs in zip(segs, segs[1:], strict=False):
            if not obs.trained:
                closed = before.token_ids[-1] == task.EOS_ID
                assert (obs.token_ids[0] == task.EOS_ID) != closed
                assert obs.token_ids[-1] == task.EQUALS_ID


def test_max_turns_ends_episodes_that_never_finish_as_truncated() -> None:
    params = AgentParams(max_turns=2)
    completions = rollout(NeverDoneEnvironment, params).generate(
        prompts(), SamplingParams(n=2, max_new_tokens=3, seed=1, stop_token_ids=(3, 4, 5, 6, 7))
    )
    for c in completions:
        assert c.episode is not None and c.episode.turns <= 2
        assert c.finish_reason == "length"
        assert c.episode.end_reason in ("max_turns", "length")
        if c.episode.end_reason == "max_turns":
            assert c.episode.turns == 2
            assert c.episode.turn_rewards == (0.25, 0.25)
            assert c.episode.counters == {"tool_calls": 2.0}


class DoneOnSecondStep(NeverDoneEnvironment):
    def __init__(self) -> None:
        self.steps = 0

    def step(self, action: Action) -> StepOutcome:
        self.steps += 1
        if self.steps == 2:
            return StepOutcome((), reward=1.0, done=True)
        return super().step(action)


def test_done_episodes_carry_the_environment_reward_and_stop() -> None:
    completions = rollout(DoneOnSecondStep, AgentParams(max_turns=4)).generate(
        prompts(2), ONE_TOKEN_TURNS
    )
    for c in completions:
        assert c.finish_reason == "stop" and c.episode is not None
        assert c.episode.end_reason == "done" and c.episode.turns == 2
        assert c.episode.turn_rewards == (0.25, 1.0) and c.episode.reward == 1.25


def test_the_retry_task_is_solved_in_later_turns_by_the_right_digit() -> None:
    completions = rollout(FakeRetryEnvironment, AgentParams(max_turns=4)).generate(
        prompts(8), SamplingParams(n=4, max_new_tokens=1, seed=0, temperature=3.0)
    )
    for c in completions:
        assert c.episode is not None
        solved = c.episode.end_reason == "done"
        assert solved == (c.episode.reward == 1.0)
        if solved:
            answer = task.correct_answer(prompts(8)[c.prompt_index].prompt_token_ids)
            assert c.episode.segments[-1].token_ids[0] == answer


def test_token_budget_caps_every_episode() -> None:
    params = AgentParams(max_turns=10, max_response_tokens=9)
    completions = rollout(NeverDoneEnvironment, params).generate(prompts(), SAMPLING)
    for c in completions:
        assert len(c.token_ids) <= 9
        assert c.episode is not None and c.episode.end_reason in ("token_budget", "length")


def test_a_hanging_environment_times_out_and_the_other_episodes_finish() -> None:
    release = threading.Event()
    made: list[int] = []

    def factory():  # type: ignore[no-untyped-def]
        made.append(1)
        return HangingEnvironment(release) if len(made) == 1 else NeverDoneEnvironment()

    params = AgentParams(max_turns=3, step_timeout_s=0.5, straggler_wait_s=0.0)
    start = time.monotonic()
    try:
        completions = rollout(factory, params).generate(prompts(2), ONE_TOKEN_TURNS)
    finally:
        release.set()
    assert time.monotonic() - start < 30  # bounded by the step deadline, not the hang
    first = completions[0].episode
    assert first is not None and first.end_reason == "env_error"
    assert first.counters["env_timeouts"] == 1.0 and first.turns == 1
    for c in completions[1:]:
        assert c.episode is not None and c.episode.end_reason in ("max_turns", "length")


def test_a_hanging_reset_still_gives_one_turn() -> None:
    release = threading.Event()
    params = AgentParams(max_turns=3, step_timeout_s=0.3)
    try:
        completions = rollout(lambda: HangingEnvironment(release, in_reset=True), params).generate(
            prompts(1), SAMPLING
        )
    finally:
        release.set()
    for c in completions:
        assert c.episode is not None and c.episode.end_reason == "env_error"
        assert c.episode.turns == 1 and c.episode.counters == {"env_timeouts": 1.0}


def test_an_environment_that_raises_ends_its_episode_counted_not_the_batch() -> None:
    completions = rollout(lambda: FailingEnvironment(fail_close=True), AgentParams()).generate(
        prompts(2), ONE_TOKEN_TURNS
    )
    for c in completions:
        assert c.episode is not None and c.episode.end_reason == "env_error"
        assert c.episode.counters == {"env_errors": 1.0} and c.episode.turns == 1


def test_a_slow_environment_does_not_hold_the_other_episodes() -> None:
    """The first episode's environment answers its first step only once the three other
    episodes have run all their turns: a rollout that waited for every step of a turn
    before generating again would deadlock here (and time the slow step out)."""
    release = threading.Event()
    fast_steps: list[int] = []
    lock = threading.Lock()

    class Fast(NeverDoneEnvironment):
        def step(self, action: Action) -> StepOutcome:
            with lock:
                fast_steps.append(1)
                if len(fast_steps) == 3 * 3:
                    release.set()
            return super().step(action)

    class Blocked(NeverDoneEnvironment):
        def step(self, action: Action) -> StepOutcome:
            release.wait(60)
            return super().step(action)

    made: list[int] = []

    def factory():  # type: ignore[no-untyped-def]
        made.append(1)
        return Blocked() if len(made) == 1 else Fast()

    engine = RecordingEngine()
    params = AgentParams(max_turns=3, straggler_wait_s=0.01, step_timeout_s=60)
    try:
        completions = rollout(factory, params, engine).generate(prompts(2), ONE_TOKEN_TURNS)
    finally:
        release.set()
    slow = completions[0].episode
    assert slow is not None and slow.turns == 3 and "env_timeouts" not in slow.counters
    assert all(c.episode is not None and c.episode.turns == 3 for c in completions)
    first = prompts(2)[0].uid + "/sample0/"
    slow_turn1 = next(
        i for i, call in enumerate(engine.calls) for uid, _, _ in call if uid == first + "turn1"
    )
    fast_last = max(
        i
        for i, call in enumerate(engine.calls)
        for uid, _, _ in call
        if uid.endswith("/turn2") and not uid.startswith(first)
    )
    assert fast_last < slow_turn1


def test_environments_are_closed_and_seeded_episodes_are_reproducible() -> None:
    envs: list[FakeRetryEnvironment] = []

    def factory() -> FakeRetryEnvironment:
        envs.append(FakeRetryEnvironment())
        return envs[-1]

    params = AgentParams(max_turns=3)
    a = rollout(factory, params).generate(prompts(4), SAMPLING)
    assert len(envs) == 8 and all(e.closed for e in envs)
    b = rollout(FakeRetryEnvironment, params).generate(prompts(4), SAMPLING)
    assert [c.token_ids for c in a] == [c.token_ids for c in b]  # seeded: reproducible


def test_port_calls_reach_the_inner_engine() -> None:
    inner = RecordingEngine()
    agent = rollout(FakeRetryEnvironment, AgentParams(), inner)
    agent.sleep()
    assert not agent.is_awake and inner.sleeps == 1
    with pytest.raises(RuntimeError, match="asleep"):
        agent.generate(prompts(1), SAMPLING)
    agent.wake_up()
    agent.load_weights([])
    assert agent.is_awake and inner.weight_syncs == 1 and not agent.shares_policy_weights


def test_the_episode_deadline_ends_episodes_waiting_on_a_slow_environment() -> None:
    params = AgentParams(max_turns=10, step_timeout_s=5.0, episode_timeout_s=0.5)
    start = time.monotonic()
    completions = rollout(lambda: SlowEnvironment(0.2), params).generate(
        prompts(2), ONE_TOKEN_TURNS
    )
    assert time.monotonic() - start < 20.0
    for c in completions:
        assert c.episode is not None and c.episode.end_reason == "deadline"
        assert 1 <= c.episode.turns <= 4 and "env_timeouts" not in c.episode.counters
        assert c.finish_reason == "length"
