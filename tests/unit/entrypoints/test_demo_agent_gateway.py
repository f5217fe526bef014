"""`lightrft demo agent --gateway`: the calculator task through the black-box agent program
(httpx and the OpenAI protocol only) trains end to end on the tiny model, tiny sizes."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from lightrft.entrypoints.recipes.agent import AGENT_PROGRAM, AgentDemoOptions, run_agent_demo

pytestmark = pytest.mark.slow


def test_the_agent_program_imports_nothing_of_lightrft() -> None:
    tree = ast.parse(AGENT_PROGRAM.read_text())
    imported = {
        (n.module or "") if isinstance(n, ast.ImportFrom) else a.name
        for n in ast.walk(tree)
        if isinstance(n, ast.Import | ast.ImportFrom)
        for a in n.names
    }
    assert not any(name.split(".")[0] == "lightrft" for name in imported), imported
    assert "httpx" in imported


def test_the_gateway_demo_trains_through_the_agent_program(tiny_dir: Path, tmp_path: Path) -> None:
    options = AgentDemoOptions(
        run_dir=tmp_path / "demo",
        train_rows=16,
        eval_rows=2,
        sft_rows=8,
        model_path=tiny_dir,
        gateway=True,
    )
    summary = run_agent_demo(
        options,
        [
            "train.total_steps=2",
            "eval.every=2",
            "rollout.prompts_per_step=2",
            "rollout.n_samples_per_prompt=2",
            "rollout.max_new_tokens=8",
        ],
    )
    assert summary["episodes"] == "gateway" and summary["rl_steps"] == 2
    rows = [
        json.loads(line)
        for line in (tmp_path / "demo" / "rl" / "metrics.jsonl").read_text().splitlines()
    ]
    steps = [r for r in rows if "agent/gateway/calls" in r]
    assert steps, "no step logged gateway metrics"
    assert all(r["agent/gateway/calls"] >= 1 for r in steps)  # the agent called the model
    assert all(r["agent/end/done"] == 1.0 for r in steps)  # and exited 0 every time
    samples = (tmp_path / "demo" / "rl" / "samples.jsonl").read_text().splitlines()
    assert samples and all("loss_mask" in json.loads(s) for s in samples)
    logs = list((tmp_path / "demo" / "rl" / "gateway_agents").glob("*.log"))
    assert logs  # each agent's output is kept beside the run
