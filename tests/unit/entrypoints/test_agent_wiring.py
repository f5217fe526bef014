"""``rollout.environment`` wires the multi-turn engine, tools and the environment reward, and
the cycle runs multi-turn steps end to end on a tiny HF model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lightrft.application.agent_rollout import AgentRolloutEngine
from lightrft.entrypoints.api import build_container
from lightrft.entrypoints.config import load_config
from lightrft.entrypoints.config.loading import ConfigError


def config(tiny_dir: Path, run_dir: Path, *extra: str):  # type: ignore[no-untyped-def]
    return load_config(
        None,
        [
            f"model.path={tiny_dir}",
            f"logging.run_dir={run_dir}",
            "rollout.environment={type: tools, tools: [calculator]}",
            "rollout.max_turns=3",
            "reward.sources=[{type: environment}]",
            "rollout.prompts_per_step=2",
            "rollout.n_samples_per_prompt=2",
            "rollout.max_new_tokens=8",
            "train.total_steps=2",
            "data.train.num_builtin=4",
            "data.eval=null",
            "logging.progress=false",
            *extra,
        ],
    )


def test_max_turns_without_an_environment_is_refused() -> None:
    with pytest.raises(ConfigError, match="needs rollout.environment"):
        load_config(None, ["rollout.max_turns=2"])


def test_the_cycle_runs_multi_turn_steps_on_a_tiny_model(tiny_dir: Path, tmp_path: Path) -> None:
    run = config(tiny_dir, tmp_path, "rollout.stop=[' ']", "logging.log_samples_per_step=4")
    container = build_container(run)
    engine = container.engine()
    assert isinstance(engine, AgentRolloutEngine)
    assert engine.params.max_turns == 3 and engine.params.stop_strings == ("</tool_call>",)
    history = container.cycle().run(resume=False)
    assert len(history) == 2
    for step in history:
        assert step["agent/episodes"] == 4 and step["agent/turns_mean"] >= 1
        assert "reward/environment/mean" in step


def test_tool_calls_observations_and_rewards_flow_through_the_wiring(
    tiny_dir: Path, tmp_path: Path
) -> None:
    """An honest scripted agent (it calls the calculator, then answers with its result)
    through the real ToolEnvironment, HfTurnRenderer, reward and sample rows."""
    run = config(
        tiny_dir,
        tmp_path,
        "plugins=[tests.helpers.agent_plugin]",
        "rollout.engine=tool_script",
        "rollout.max_new_tokens=200",
        "data.train.difficulty=1",
        "logging.log_samples_per_step=4",
    )
    container = build_container(run)
    history = container.cycle().run(resume=False)
    for step in history:
        assert step["agent/turns_mean"] == 2 and step["agent/end/done"] == 1
        assert step["agent/tool_calls"] == 1 and step["agent/answers"] == 1
        assert step["agent/observation_tokens_mean"] > 0
    rows = [json.loads(line) for line in (tmp_path / "samples.jsonl").read_text().splitlines()]
    assert len(rows) == 8
    for row in rows:
        assert len(row["loss_mask"]) == row["length"] == len(row["token_ids"])
        assert [t["trained"] for t in row["turns"]] == [True, False, True]
        mask = [int(t["trained"]) for t in row["turns"] for _ in range(t["tokens"])]
        assert mask == row["loss_mask"]
        observation = row["turns"][1]["text"]
        assert observation.startswith("\ntool: ") and observation.endswith("assistant: ")
        result = int(observation.split("tool: ")[1].split()[0])
        answered = int(row["response"].split("####")[1])
        assert answered == result
        assert row["rewards"]["environment"] == (1.0 if " buys " in row["prompt"] else 0.0)


def test_http_environment_section_builds_the_client() -> None:
    from lightrft.adapters.agents.http_environment import HttpEnvironments
    from lightrft.entrypoints.wiring.agents import build_http_environment

    with pytest.raises(ConfigError, match="url"):
        load_config(None, ["rollout.environment={type: http}"])
    run = load_config(
        None,
        [
            "rollout.environment={type: http, url: 'http://127.0.0.1:9', max_attempts: 2, "
            "stop: ['</tool_call>']}",
            "rollout.max_turns=4",
        ],
    )
    section = run.rollout.environment
    assert section.stop_strings() == ("</tool_call>",)  # type: ignore[union-attr]
    factory = build_http_environment(section, None)  # type: ignore[arg-type]
    assert isinstance(factory, HttpEnvironments) and factory.poster.policy.max_attempts == 2
    factory.close()


def test_tool_format_choices_equal_the_registry() -> None:
    from typing import get_args

    from lightrft.domain.tool_calls import TOOL_CALL_FORMATS
    from lightrft.entrypoints.config.agent_configs import ToolFormatName

    assert set(get_args(ToolFormatName)) == set(TOOL_CALL_FORMATS.names())
