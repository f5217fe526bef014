"""Runs on a tiny HF model against HTTP environments on 127.0.0.1 that answer badly or not
at all (EDGE_CASES HE10, HE03): the run survives a bad answer, counted, and stops with a
checkpoint and a message naming the service when the service is down.

On main as of 5ffe8f3 the first test ended in ``IndexError: index out of range in self``
(the engine's embedding read id 10**9) and the second trained on nothing and exited 0."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from lightrft.adapters.agents.environment_service import EnvironmentService, create_app
from lightrft.adapters.service_access import BackgroundServer
from lightrft.application.env_failures import EnvironmentFailingError
from lightrft.domain.types import PromptRecord
from lightrft.entrypoints.api import build_container
from lightrft.entrypoints.config import load_config
from tests.helpers.agent_envs import NeverDoneEnvironment


class BadIds(NeverDoneEnvironment):
    def reset(self, prompt: PromptRecord) -> PromptRecord:
        return PromptRecord(prompt.uid, prompt.prompt_text, (10**9, -5, 3))


def config(tiny_dir: Path, run_dir: Path, url: str, *extra: str):  # type: ignore[no-untyped-def]
    return load_config(
        None,
        [
            f"model.path={tiny_dir}",
            f"logging.run_dir={run_dir}",
            f"rollout.environment={{type: http, url: '{url}', timeout_s: 3, max_attempts: 1}}",
            "rollout.max_turns=3",
            "reward.sources=[{type: environment}]",
            "rollout.prompts_per_step=1",
            "rollout.n_samples_per_prompt=2",
            "rollout.max_new_tokens=4",
            "data.train.num_builtin=4",
            "data.eval=null",
            "eval.every=null",
            "logging.progress=false",
            *extra,
        ],
    )


def test_out_of_vocabulary_ids_from_an_http_environment_end_episodes_not_the_run(
    tiny_dir: Path, tmp_path: Path
) -> None:
    with BackgroundServer(create_app(EnvironmentService(BadIds))) as server:
        run = config(tiny_dir, tmp_path, server.url, "train.total_steps=1")
        history = build_container(run).cycle().run(resume=False)
    (step,) = history
    assert step["agent/end/env_invalid"] == 1.0 and step["agent/env_invalid_answers"] == 1.0
    assert step["agent/turns_mean"] == 1.0  # one turn on the dataset's own prompt


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_an_environment_down_all_run_stops_it_with_a_checkpoint_naming_the_service(
    tiny_dir: Path, tmp_path: Path
) -> None:
    url = f"http://127.0.0.1:{_free_port()}"  # nothing listens there
    run = config(tiny_dir, tmp_path, url, "train.total_steps=5")
    cycle = build_container(run).cycle()
    with pytest.raises(EnvironmentFailingError, match=f"environment service {url} failed"):
        cycle.run(resume=False)
    assert cycle.state.step == 2  # rollouts 1 and 2 trained, the third stopped the run
    saved = sorted(p.name for p in (tmp_path / "checkpoints").iterdir())
    assert saved and saved[-1].endswith("2")


class HugeObservation(NeverDoneEnvironment):
    def step(self, action):  # type: ignore[no-untyped-def]
        from lightrft.domain.agent import ChatMessage, StepOutcome

        return StepOutcome((ChatMessage("tool", "1" * 5_000_000),))


@pytest.mark.parametrize("cap", ["", "max_response_bytes: 16777216, "])
def test_a_five_megabyte_observation_ends_its_episode_and_memory_stays_bounded(
    tiny_dir: Path, tmp_path: Path, cap: str
) -> None:
    """HE11: refused while it streams in (the default 4 MiB cap: env_error) or, under a
    larger cap, before it is tokenised (observation_too_long)."""
    with BackgroundServer(create_app(EnvironmentService(HugeObservation))) as server:
        section = f"{{type: http, url: '{server.url}', {cap}timeout_s: 10, max_attempts: 1}}"
        run = config(
            tiny_dir,
            tmp_path,
            server.url,
            "train.total_steps=1",
            f"rollout.environment={section}",
            "plugins=[tests.helpers.agent_plugin]",
            "rollout.engine=tool_script",  # its first turn stops at a tool call
            "rollout.max_new_tokens=200",
        )
        (step,) = build_container(run).cycle().run(resume=False)
    reason = "observation_too_long" if cap else "env_error"
    assert step[f"agent/end/{reason}"] == 1.0
    assert step["agent/observation_tokens_mean"] == 0.0
