"""The rollout gateway with the fake engine: agent programs (separate processes that speak
only HTTP) drive episodes; the trained rows hold exactly the ids the engine sampled."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

import httpx

from lightrft.adapters.fakes import FakeRolloutEngine
from lightrft.adapters.fakes.chat_renderer import FakeChatRenderer
from lightrft.adapters.fakes.task import synthetic_records
from lightrft.adapters.gateway.agent_process import SubprocessAgentLauncher
from lightrft.adapters.gateway.server import start_gateway
from lightrft.application.gateway_rollout import GatewayParams, GatewayRolloutEngine
from lightrft.application.gateway_session import GatewaySession
from lightrft.domain.types import Completion, PromptRecord, SamplingParams

SAMPLING = SamplingParams(n=1, max_new_tokens=3, temperature=1.0)


class Recording:
    """The fake engine, keeping every (input, sample) it produced."""

    def __init__(self, delay_s: float = 0.0) -> None:
        self.inner = FakeRolloutEngine(seed=3)
        self.delay_s = delay_s
        self.seen: list[tuple[PromptRecord, Completion]] = []

    def generate(
        self, prompts: Sequence[PromptRecord], sampling: SamplingParams
    ) -> list[Completion]:
        time.sleep(self.delay_s)
        out = self.inner.generate(prompts, sampling)
        for k, c in enumerate(out):
            self.seen.append((prompts[k // sampling.n], c))
        return out

    def load_weights(self, weights: object) -> None:
        self.inner.load_weights(weights)  # type: ignore[arg-type]

    def sleep(self) -> None: ...
    def wake_up(self) -> None: ...

    is_awake = True
    shares_policy_weights = False


def gateway(
    tmp_path: Path,
    agent: str | list[str],
    engine: Recording | None = None,
    call_timeout_s: float = 30.0,
    **params: object,
) -> tuple[GatewayRolloutEngine, Recording]:
    """The gateway over ``engine``; ``agent``: a function of tests/helpers/gateway_agents.py,
    or a command."""
    engine = engine or Recording()
    session = GatewaySession(FakeChatRenderer(), call_timeout_s=call_timeout_s)
    if isinstance(agent, str):
        launcher = SubprocessAgentLauncher(
            tmp_path, function=f"tests.helpers.gateway_agents:{agent}"
        )
    else:
        launcher = SubprocessAgentLauncher(tmp_path, command=agent)
    defaults: dict[str, object] = {"episode_timeout_s": 60.0, "straggler_wait_s": 0.0}
    settings = GatewayParams(**{**defaults, **params})  # type: ignore[arg-type]
    return GatewayRolloutEngine(engine, session, launcher, start_gateway, settings), engine


def test_recorded_ids_are_the_engines_samples_and_only_they_are_trained(tmp_path: Path) -> None:
    rollout, engine = gateway(tmp_path, "continuing")
    prompts = synthetic_records(1, seed=5)
    completions = rollout.generate(prompts, SAMPLING)
    assert len(completions) == 1
    for i, c in enumerate(completions):
        assert c.prompt_index == i and c.episode is not None
        uid = prompts[i].uid
        calls = [(p, s) for p, s in engine.seen if p.uid.startswith(uid + "/")]
        assert len(calls) == 3
        # token-exact: the row is the last input the engine saw plus what it sampled there
        assert (
            c.prompt_token_ids + c.token_ids
            == calls[-1][0].prompt_token_ids + calls[-1][1].token_ids
        )
        trained = [t for t, m in zip(c.token_ids, c.loss_mask, strict=True) if m]
        assert trained == [t for _, s in calls for t in s.token_ids]
        # every call's input is a prefix of the row: nothing was re-tokenised
        for p, _ in calls:
            assert (c.prompt_token_ids + c.token_ids)[
                : len(p.prompt_token_ids)
            ] == p.prompt_token_ids
        engine_logprobs = [v for _, s in calls for v in s.logprobs]
        assert [v for v, m in zip(c.logprobs, c.loss_mask, strict=True) if m] == engine_logprobs
        assert c.episode.end_reason == "done" and c.episode.reward == 0.75
        assert c.episode.counters["gateway/calls"] == 3
        assert c.episode.counters["gateway/history_rewrites"] == 0
        assert c.episode.counters["gateway/policy_version"] == 0
    rollout.load_weights(list(engine.inner.named_parameters().items()))
    again = rollout.generate(prompts[:1], SAMPLING)
    assert again[0].episode.counters["gateway/policy_version"] == 1


def test_a_history_rewriting_agent_is_segmented_and_counted(tmp_path: Path) -> None:
    rollout, engine = gateway(tmp_path, "rewriting")
    prompts = synthetic_records(1, seed=6)
    completions = rollout.generate(prompts, SAMPLING)
    assert len(completions) == 2  # the episode's final row, then its earlier one
    final, earlier = completions
    assert final.episode.end_reason == "done"
    assert earlier.episode.end_reason == "history_rewritten"
    assert final.episode.counters["gateway/history_rewrites"] == 1
    (first_in, first_out), (second_in, second_out) = engine.seen
    assert earlier.prompt_token_ids == first_in.prompt_token_ids
    assert earlier.token_ids == first_out.token_ids and set(earlier.loss_mask) == {1}
    assert final.prompt_token_ids == second_in.prompt_token_ids
    assert final.token_ids == second_out.token_ids
    assert final.episode.reward == earlier.episode.reward == 0.5  # the reward file
    assert final.text == earlier.text  # both rows carry the episode's final answer


def test_a_hung_agent_is_killed_with_its_children_at_the_deadline(tmp_path: Path) -> None:
    # a shell that starts a child which would outlive it, then waits forever
    hung = ["sh", "-c", 'sleep 600 & echo $! > "$LIGHTRFT_REWARD_FILE.child"; wait']
    rollout, _ = gateway(tmp_path, hung, episode_timeout_s=1.5)
    start = time.monotonic()
    (completion,) = rollout.generate(synthetic_records(1, seed=7), SAMPLING)
    assert time.monotonic() - start < 20
    assert completion.episode.end_reason == "deadline"
    assert completion.episode.counters["gateway/no_calls"] == 1  # one turn on the prompt
    child = int((tmp_path / "reward-0.txt.child").read_text())
    time.sleep(0.2)
    assert not _alive(child)


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a killed child nobody reaped yet is a zombie: not running)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def test_bad_tokens_get_401_and_old_tokens_expire(tmp_path: Path) -> None:
    rollout, _ = gateway(tmp_path, "probing")
    (completion,) = rollout.generate(synthetic_records(1, seed=8), SAMPLING)
    assert completion.episode.end_reason == "done"  # the agent's own checks passed
    token = rollout.last_episodes[0].token
    response = httpx.get(f"{rollout.url}/v1/models", headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 401  # the episode is over
    assert httpx.get(f"{rollout.url}/v1/models").status_code == 401


def test_a_call_past_its_deadline_is_a_504_and_is_not_recorded(tmp_path: Path) -> None:
    rollout, _ = gateway(tmp_path, "slow_call", engine=Recording(delay_s=1.0), call_timeout_s=0.3)
    (completion,) = rollout.generate(synthetic_records(1, seed=9), SAMPLING)
    episode = rollout.last_episodes[0]
    assert episode.end_reason == "agent_error"  # exit status 4: it saw the 504
    assert episode.calls == [] and episode.counters["gateway/call_timeouts"] == 1
    assert completion.episode.counters["gateway/no_reward"] == 1
