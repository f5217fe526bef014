"""`lightrft demo agent`'s stages run end to end (on the tiny model, tiny sizes) and write
the summary, the samples with loss masks and the trajectory page with marked turns."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from lightrft.entrypoints.recipes.agent import AgentDemoOptions, run_agent_demo
from lightrft.entrypoints.run_dir.directory import RunDirectoryError


def test_the_agent_demo_runs_its_three_stages(tiny_dir: Path, tmp_path: Path) -> None:
    options = AgentDemoOptions(
        run_dir=tmp_path / "demo", train_rows=16, eval_rows=4, sft_rows=8, model_path=tiny_dir
    )
    summary = run_agent_demo(
        options,
        [
            "train.total_steps=1",
            "eval.every=1",
            "rollout.prompts_per_step=2",
            "rollout.n_samples_per_prompt=2",
            "rollout.max_new_tokens=8",
        ],
    )
    for key in (
        "eval_accuracy_before",
        "eval_accuracy_after_sft",
        "eval_accuracy_after",
        "tool_use_rate_before",
        "tool_use_rate_after_sft",
        "tool_use_rate_after",
    ):
        assert 0.0 <= summary[key] <= 1.0, key
    assert summary["sft_steps"] == 1 and summary["rl_steps"] == 1
    assert json.loads((tmp_path / "demo" / "summary.json").read_text()) == summary
    rows = (tmp_path / "demo" / "rl" / "samples.jsonl").read_text().splitlines()
    assert rows and all("loss_mask" in json.loads(r) for r in rows)
    assert Path(summary["trajectories"]).exists() and Path(summary["report"]).exists()
    assert (tmp_path / "demo" / "sft" / "final_model").is_dir()
    assert not (tmp_path / "demo" / "sft" / "checkpoints").exists()  # not kept: never resumed
    traces = (tmp_path / "demo" / "tool_traces.jsonl").read_text().splitlines()
    roles = sorted(tuple(m["role"] for m in json.loads(t)["messages"]) for t in traces)
    direct = ("system", "user", "assistant")
    with_tool = ("system", "user", "assistant", "tool", "assistant")
    assert roles == [direct] * 6 + [with_tool] * 2  # sft_tool_fraction 0.25 of 8 chats

    # the run directory is guarded: a second demo there is refused, nothing overwritten
    before = (tmp_path / "demo" / "summary.json").read_text()
    with pytest.raises(RunDirectoryError, match="holds a previous run"):
        run_agent_demo(options)
    assert (tmp_path / "demo" / "summary.json").read_text() == before


def test_the_command_moves_a_previous_demo_aside(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from lightrft.entrypoints import cli
    from lightrft.entrypoints.recipes import agent

    seen: list[AgentDemoOptions] = []

    def fake_demo(options: AgentDemoOptions, rest: Any) -> dict[str, Any]:
        seen.append(options)
        keys = ("before", "after_sft", "after")
        return {f"{k}_{s}": 0.5 for k in ("eval_accuracy", "tool_use_rate") for s in keys}

    monkeypatch.setattr(agent, "run_agent_demo", fake_demo)
    cli.main(["demo", "agent", "train.seed=2", f"logging.run_dir={tmp_path / 'x'}"])
    assert seen == [AgentDemoOptions(run_dir=tmp_path / "x", seed=2, overwrite=True)]
