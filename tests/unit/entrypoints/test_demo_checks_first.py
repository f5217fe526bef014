"""Every demo checks its flags and overrides before its first stage starts (EDGE_CASES
DM03, DM04, DM06), and a demo's own directory given as ``logging.run_dir=DIR`` holds every
stage (the `demo safe ... logging.run_dir=DIR` case: reward models elsewhere, figures read
from the directory it did not use, a TypeError at the end).

The stages are replaced by recorders that fail the test when a stage starts too early; the
checks are the recipes' own."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from lightrft.entrypoints.cli import main


class _Started(AssertionError):
    """A stage started although the command should have been refused first."""


def _no_stage(*_args: object, **_kwargs: object) -> Any:
    raise _Started("a stage started before the arguments were checked")


@pytest.fixture
def no_stages(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import lightrft.entrypoints.jobs.eval as eval_job
    import lightrft.entrypoints.jobs.reward_model as rm_job
    import lightrft.entrypoints.jobs.sft as sft_job
    import lightrft.entrypoints.jobs.training as training_job

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(rm_job, "train_reward_model", _no_stage)
    monkeypatch.setattr(sft_job, "sft", _no_stage)
    monkeypatch.setattr(eval_job, "evaluate", _no_stage)
    monkeypatch.setattr(training_job, "train", _no_stage)


def _refused(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    code = main(["demo", *argv])
    err = capsys.readouterr().err
    assert code == 2, err
    return err


@pytest.mark.parametrize("limit", ["nan", "-3", "1.5"])
def test_safe_refuses_a_bad_cost_limit_before_any_model_trains(
    no_stages: None, capsys: pytest.CaptureFixture[str], limit: str
) -> None:
    """DM03 / DM06: accepted until the reward models had trained (minutes)."""
    err = _refused(capsys, "safe", "--cost-limit", limit)
    assert f"--cost-limit {float(limit)}" in err and "[0, 1]" in err
    assert not Path("runs").exists()  # nothing written, nothing moved aside


@pytest.mark.parametrize("recipe", ["agent", "safe", "rlhf", "ttrl"])
def test_a_bad_override_is_refused_before_the_first_stage(
    no_stages: None, capsys: pytest.CaptureFixture[str], recipe: str
) -> None:
    """DM04: `demo agent model.colour=red` ran the base evaluation and the SFT warm-up
    first; rlhf and safe trained their reward models first, ttrl exported its model."""
    err = _refused(capsys, recipe, "model.colour=red")
    assert "model.colour: unknown key" in err and "checked before any stage runs" in err
    assert not Path("runs").exists()


def test_safe_honours_logging_run_dir_for_every_stage(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`demo safe logging.run_dir=DIR`: the override reached the GRPO stage only (DIR held
    its run, the reward models and the summary went to runs/demo_safe, the figures were read
    from runs/demo_safe/grpo: all null, then a TypeError)."""
    import lightrft.entrypoints.jobs.reward_model as rm_job
    import lightrft.entrypoints.jobs.training as training_job

    monkeypatch.chdir(tmp_path)
    outputs: list[Path] = []

    def fake_rm(options: Any) -> dict[str, Any]:
        outputs.append(Path(options.output))
        model = Path(options.output) / "final_model"
        return {"eval/accuracy": 1.0, "eval_pairs": 4, "model": str(model)}

    def fake_train(config: Any, **_kwargs: object) -> dict[str, Any]:
        run = Path(config.logging.run_dir)
        outputs.append(run)
        run.mkdir(parents=True)
        rows = [
            {
                "step": 0,
                "eval/reward_mean": 0.0,
                "eval/reward/helpful/mean": 0.1,
                "eval/reward/names_person/mean": 0.5,
            },
            {"step": 1, "constraint/cost/multiplier": 0.2, "constraint/cost/violation_rate": 0.3},
            {
                "step": 1,
                "eval/reward_mean": 0.0,
                "eval/reward/helpful/mean": 0.4,
                "eval/reward/names_person/mean": 0.25,
            },
        ]
        (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        return {"run_dir": str(run)}

    monkeypatch.setattr(rm_job, "train_reward_model", fake_rm)
    monkeypatch.setattr(training_job, "train", fake_train)
    assert main(["demo", "safe", "train.seed=17", "logging.run_dir=mine"]) == 0
    assert outputs == [Path("mine/helpful"), Path("mine/cost"), Path("mine/grpo")]
    summary = json.loads((tmp_path / "mine" / "summary.json").read_text())
    assert summary["reward_after"] == 0.4 and summary["cost_rate_after"] == 0.25
    assert not (tmp_path / "runs").exists()
    assert "unsafe rate 0.500 -> 0.250" in capsys.readouterr().out


def test_run_dir_and_a_different_logging_run_dir_are_refused(
    no_stages: None, capsys: pytest.CaptureFixture[str]
) -> None:
    err = _refused(capsys, "rlhf", "--run-dir", "a", "logging.run_dir=b")
    assert "--run-dir a" in err and "logging.run_dir=b" in err
