"""`lightrft demo [NAME] ...`: the recipe registry picks the recipe by its name, parses only
that recipe's flags (before or after the name) and hands it the overrides."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pytest

from lightrft.domain.registry import UnknownChoiceError
from lightrft.entrypoints.cli import main
from lightrft.entrypoints.recipes import distill, rlhf, safe
from lightrft.entrypoints.recipes.demo import DEMO_OVERRIDES
from lightrft.entrypoints.recipes.registry import RECIPE_MODULES, load_recipes


def test_every_built_in_recipe_is_registered_once() -> None:
    recipes = load_recipes()
    assert recipes.names() == ("agent", "distill", "grpo", "prm", "rlhf", "safe", "ttrl")
    with pytest.raises(ValueError, match="demo recipe 'grpo' is already registered"):
        load_recipes((*RECIPE_MODULES, "lightrft.entrypoints.recipes.demo"))


def test_flags_before_the_name_and_after_it_reach_the_rlhf_recipe(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    seen: list[tuple[rlhf.RlhfDemoOptions, list[str]]] = []

    def fake(options: rlhf.RlhfDemoOptions, overrides: list[str]) -> dict[str, Any]:
        seen.append((options, list(overrides)))
        return {"reward_model": {}}

    monkeypatch.setattr(rlhf, "run_rlhf_demo", fake)
    argv = ["demo", "--run-dir", str(tmp_path), "--rm-pairs", "32", "--serve-rm", "rlhf"]
    assert main([*argv, "--rm-epochs", "1", "train.seed=3"]) == 0
    ((options, overrides),) = seen
    assert (options.run_dir, options.rm_pairs, options.rm_epochs) == (tmp_path, 32, 1)
    assert options.serve_rm and not options.rm_train_backbone and options.overwrite
    assert options.rm_lr == 2e-3 and options.rm_model is None
    assert overrides == ["train.seed=3"]


def test_the_safe_recipe_takes_its_flags_and_its_seed(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[safe.SafeDemoOptions, list[str]]] = []

    def fake(options: safe.SafeDemoOptions, overrides: list[str]) -> dict[str, Any]:
        seen.append((options, list(overrides)))
        keys = ("reward_before", "reward_after", "cost_rate_before", "cost_rate_after")
        return {**dict.fromkeys(keys, 0.0), "cost_limit": 0.2, "multiplier_final": None}

    monkeypatch.setattr(safe, "run_safe_demo", fake)
    argv = ["demo", "--no-constraint", "--helpful-model=h", "--cost-limit", "0.2", "safe"]
    assert main([*argv, "train.seed=4", "optim.lr=1e-5"]) == 0
    ((options, overrides),) = seen
    assert not options.constrained and options.limit == 0.2 and options.seed == 4
    assert options.helpful_model == Path("h") and options.cost_model is None
    assert options.run_dir == Path("runs/demo_safe") and overrides == ["optim.lr=1e-5"]


def test_no_name_is_the_main_job_and_resume_changing_still_reaches_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import lightrft.entrypoints.jobs.demo as job

    seen: list[list[str]] = []

    def fake(overrides: list[str], argv: object) -> int:
        seen.append(overrides)
        return 0

    monkeypatch.setattr(job, "run_grpo_demo", fake)
    assert main(["demo", "train.seed=2", "--resume-changing", "optim.lr", "--resume"]) == 0
    assert main(["demo", "grpo", "train.seed=5"]) == 0
    assert seen[0] == [  # resuming: the recipe's start-over (logging.overwrite) yields
        *[word for word in DEMO_OVERRIDES if not word.startswith("logging.overwrite=")],
        "train.seed=2",
        "--resume",
        "checkpoint.resume_changing=[optim.lr]",
    ]
    assert seen[1] == [*DEMO_OVERRIDES, "train.seed=5"]


def test_the_distill_recipe_gets_its_teacher(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[Path | None, list[str]]] = []

    def fake(teacher: Path | None, rest: list[str]) -> dict[str, Any]:
        seen.append((teacher, rest))
        return {}

    monkeypatch.setattr(distill, "run_distill_demo", fake)
    assert main(["demo", "distill", "--teacher", "t", "train.seed=1"]) == 0
    assert seen == [(Path("t"), ["train.seed=1"])]


def test_an_unknown_name_is_refused_naming_the_recipes() -> None:
    from lightrft.entrypoints.commands.demo import run

    args = argparse.Namespace(argv=("demo", "rhlf"), resume_changing=[])
    with pytest.raises(UnknownChoiceError, match="unknown demo recipe 'rhlf'; valid choices: "):
        run(args, ["rhlf", "train.seed=1"])
    with pytest.raises(UnknownChoiceError, match="agent, distill, grpo, prm, rlhf, safe, ttrl"):
        run(args, ["--run-dir", "d", "rhlf"])


def test_another_recipes_flag_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["demo", "--teacher", "t", "train.seed=1"])
    assert info.value.code == 2
    assert "--teacher is a flag of 'lightrft demo distill'" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("name", "own", "others"),
    [
        ("rlhf", ["--rm-pairs", "--serve-rm", "--rm-model"], ["--teacher", "--cost-limit"]),
        ("safe", ["--cost-limit", "--helpful-model"], ["--serve-rm", "--teacher"]),
        ("distill", ["--teacher"], ["--rm-pairs", "--run-dir"]),
        ("agent", ["--run-dir"], ["--rm-pairs"]),
        ("ttrl", ["--resume-changing"], ["--run-dir", "--teacher"]),
    ],
)
def test_a_recipes_help_shows_its_own_flags(
    name: str, own: list[str], others: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as info:
        main(["demo", name, "--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: lightrft demo {name}")
    assert all(flag in out for flag in own) and not any(flag in out for flag in others)
    assert "recipes: agent, distill, grpo (default), prm, rlhf, safe, ttrl" in " ".join(out.split())
