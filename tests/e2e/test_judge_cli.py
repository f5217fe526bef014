"""`lightrft rm train --kind generative` in-process on the tiny model: a judge fine-tuned on
the built-in judge rows (the verdict depends on whether the response states a number) is
measured before and after through the generative_rm source, then loaded as that source
from the summary's `reward_source` entry and used to score responses."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from lightrft.adapters.datasets.judge_rows import synthetic_judge_rows
from lightrft.adapters.datasets.rendering import PromptRenderer
from lightrft.domain.types import Completion, PromptRecord, RewardSample
from lightrft.entrypoints.cli import main
from lightrft.entrypoints.config.loading import load_config
from lightrft.entrypoints.wiring import models
from lightrft.entrypoints.wiring.registries import REWARD_SOURCES, BuildContext, build
from tests.unit.adapters.hf.hf_tiny import tiny_tokenizer

TEMPLATE = "Q {prompt}\nA {response}\nV "  # short rows: the tiny model has 128 positions
JUDGE = [
    "rm",
    "train",
    "--kind",
    "generative",
    "--template",
    TEMPLATE,
    "--max-new-tokens",
    "48",
    "--batch-size",
    "8",
    "--micro-batch-size",
    "8",
    "--eval-fraction",
    "0.25",
]


def load_judge(entry: dict[str, Any]) -> Any:
    """The reward source a run config with ``entry`` in ``reward.sources`` builds."""
    config = load_config(None, {"reward.sources": [entry]})
    (section,) = config.reward.typed_sources
    device = models.device_of(models.build_accelerator(config))
    return build(REWARD_SOURCES, section, BuildContext(config, Path("."), device, None, None))  # type: ignore[arg-type]


def sample(question: str, response: str) -> RewardSample:
    return RewardSample(PromptRecord("q", question, (1,)), Completion(0, (2,), response, "stop"))


def test_short_run_writes_summary_and_a_loadable_judge(tiny_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "judge"
    argv = [*JUDGE, "--output", str(out), "--model", str(tiny_dir), "--num-synthetic", "16"]
    assert main([*argv, "--total-steps", "2", "--lr", "1e-3", "--max-new-tokens", "8"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["steps"] == 2 and summary["kind"] == "generative"
    assert summary["train_rows"] == 12 and summary["held_out_rows"] == 4
    for when in ("before", "after"):
        assert 0.0 <= summary[f"verdict_accuracy_{when}"] <= 1.0
        assert 0.0 <= summary[f"unparsable_rate_{when}"] <= 1.0
    entry = summary["reward_source"]
    assert entry["type"] == "generative_rm" and entry["template"] == TEMPLATE
    assert Path(entry["path"]) == out / "final_model"
    judge = load_judge(entry)
    result = judge.score([sample("2+2?", "The answer is 4."), sample("2+3?", "No idea.")])
    assert result.scores.shape == (2,) and len(judge.last_verdicts) == 2


@pytest.mark.slow
def test_judge_learns_the_verdict_and_scores_as_a_reward_source(
    tiny_dir: Path, tmp_path: Path
) -> None:
    out = tmp_path / "judge"
    argv = [*JUDGE, "--output", str(out), "--model", str(tiny_dir), "--num-synthetic", "64"]
    assert main([*argv, "--total-steps", "60", "--lr", "1e-2"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    # chance is 0.5 (half the held-out rows of each verdict); the random model writes none
    assert summary["verdict_accuracy_before"] < 0.5
    assert summary["verdict_accuracy_after"] >= 0.9
    assert summary["unparsable_rate_after"] <= 0.1
    judge = load_judge(summary["reward_source"])
    fresh = synthetic_judge_rows(16, seed=7)  # problems the run never saw
    policy = PromptRenderer(tiny_tokenizer())  # prompts as a policy's rollout renders them
    result = judge.score([sample(policy.text(row["prompt"]), row["response"]) for row in fresh])
    expected = [row["label"] / 10 for row in fresh]  # 0.8 answered, 0.2 refused
    right = sum(abs(s - e) < 1e-6 for s, e in zip(result.scores.tolist(), expected, strict=True))
    assert right >= 14, (result.scores.tolist(), judge.last_verdicts)


def test_flags_of_the_other_kind_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = str(tmp_path / "x")
    assert main([*JUDGE, "--output", out, "--margin", "0.5"]) == 2
    assert "--margin applies to --kind scalar, not generative" in capsys.readouterr().err
    assert main(["rm", "train", "--output", out, "--verdict", "label"]) == 2
    assert "--verdict applies to --kind generative, not scalar" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


def test_bad_rows_are_named_before_training(
    tiny_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [
        {"prompt": "2+2?", "response": "4", "judgement": "Right.\nScore: 9/10"},
        {"prompt": "2+2?", "response": "5", "judgement": "Wrong.", "label": 1},
    ]
    data = tmp_path / "judged.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in rows))
    out = tmp_path / "judge"
    argv = [*JUDGE, "--output", str(out), "--model", str(tiny_dir), "--data", str(data)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "judged.jsonl row 1: no verdict ScoreVerdict can read" in err and "'judgement'" in err
    assert not out.exists()
