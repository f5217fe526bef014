"""The built-in jobs' settings: what each demo trains on and how it is measured."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from lightrft.entrypoints.config.loading import load_config
from lightrft.entrypoints.jobs.demo import _held_out_accuracy
from lightrft.entrypoints.recipes.demo import DEMO_OVERRIDES
from lightrft.entrypoints.recipes.rlhf import GRPO_OVERRIDES, INSTRUCTION, seed_of
from lightrft.entrypoints.recipes.ttrl import START_MODEL, TTRL_OVERRIDES


def test_grpo_demo_pays_nothing_for_an_unfinished_answer() -> None:
    config = load_config(None, DEMO_OVERRIDES, algorithm="grpo")
    assert config.reward.truncated_reward == 0.0
    assert config.train.seed == 0
    assert config.data.eval is not None and config.data.eval.builtin_split == "heldout"


def test_main_job_restarts_a_run_whose_entropy_collapsed_early_and_the_others_do_not() -> None:
    from lightrft.entrypoints.recipes.distill import DISTILL_OVERRIDES

    config = load_config(None, DEMO_OVERRIDES, algorithm="grpo")
    health = config.to_domain().health
    assert (health.on_collapse, health.on_collapse_signals) == (
        "rollback",
        ("early_entropy_collapse",),
    )
    assert health.rollback_lr_factor == 1.0 and health.rollback.redo_steps
    # evaluated only before the first and after the last step: the rollback goes to the start
    assert health.rollback_rank_by == "auto"
    assert config.eval.every is not None and config.eval.every > 3 * config.train.total_steps
    for extra in (TTRL_OVERRIDES, [*DISTILL_OVERRIDES, "teacher.path=runs/teacher"]):
        later = load_config(None, DEMO_OVERRIDES + extra, algorithm="grpo")
        assert later.to_domain().health.on_collapse == "warn"


def test_main_job_samples_16_prompts_x_4_ttrl_8_x_8_and_distill_8_x_4() -> None:
    from lightrft.entrypoints.recipes.distill import DEMO_OVERRIDES as BASE
    from lightrft.entrypoints.recipes.distill import DISTILL_OVERRIDES

    main = load_config(None, DEMO_OVERRIDES, algorithm="grpo").rollout
    assert (main.prompts_per_step, main.n_samples_per_prompt, main.temperature) == (16, 4, 0.6)
    ttrl = load_config(None, DEMO_OVERRIDES + TTRL_OVERRIDES, algorithm="grpo").rollout
    assert (ttrl.prompts_per_step, ttrl.n_samples_per_prompt, ttrl.temperature) == (8, 8, 0.6)
    distill_args = [*BASE, *DISTILL_OVERRIDES, "teacher.path=runs/teacher"]
    distill = load_config(None, distill_args, algorithm="grpo").rollout
    assert (distill.prompts_per_step, distill.n_samples_per_prompt) == (8, 4)
    assert distill.temperature == 0.8


def test_ttrl_demo_is_label_free_and_measures_the_math_rule() -> None:
    config = load_config(None, DEMO_OVERRIDES + TTRL_OVERRIDES, algorithm="grpo")
    sources = {s.label: s for s in config.reward.typed_sources}
    assert sources["ttrl"].type == "ttrl"
    assert sources["math"].type == "math"
    # the reward the policy sees is agreement only: the reference-using rule weighs 0
    assert config.to_domain().shaping.weights == {"ttrl": 1.0, "math": 0.0}


def test_ttrl_demo_trains_on_the_held_out_problems_it_is_evaluated_on() -> None:
    """Test-time RL: the training prompts are data.eval's problems (answers unused)."""
    config = load_config(None, DEMO_OVERRIDES + TTRL_OVERRIDES, algorithm="grpo")
    train, held_out = config.data.train, config.data.eval
    assert held_out is not None
    keys = ("builtin_split", "seed", "num_builtin", "difficulty", "instruction", "system_prompt")
    assert {k: getattr(train, k) for k in keys} == {k: getattr(held_out, k) for k in keys}
    assert config.eval.max_prompts == held_out.num_builtin == 100
    # held to the starting model, measured by sampled pass@1
    assert config.algorithm.kl_coef > 0 and config.eval.n_samples == 8


def test_main_job_keeps_the_checkpoint_ttrl_starts_from() -> None:
    config = load_config(None, DEMO_OVERRIDES, algorithm="grpo")
    every, kept = config.checkpoint.every, config.checkpoint.keep_last
    assert every is not None and config.train.total_steps <= every * kept  # 5, 10, 15 kept


def test_rlhf_demo_settings_keep_the_instruction_and_the_seed() -> None:
    config = load_config(None, [*GRPO_OVERRIDES, "train.seed=3"], algorithm="grpo")
    assert config.data.train.instruction == INSTRUCTION  # a colon would turn it into YAML
    assert config.reward.truncated_reward == -1.0
    assert seed_of(["train.seed=3", "optim.lr=1e-5"]) == 3 and seed_of([]) == 0


def test_held_out_accuracy_prefers_the_math_rule(tmp_path: Path) -> None:
    rows = [
        {"step": 0, "eval/accuracy": 0.9, "eval/reward/math/accuracy": 0.2},
        {"step": 5, "reward/mean": 0.5},
        {"step": 10, "eval/accuracy": 1.0, "eval/reward/math/accuracy": 0.4},
    ]
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert _held_out_accuracy(tmp_path) == (0.2, 0.4)
    (tmp_path / "metrics.jsonl").write_text(json.dumps({"step": 0, "eval/accuracy": 0.3}) + "\n")
    assert _held_out_accuracy(tmp_path) == (0.3, None)


def test_ttrl_demo_needs_the_main_jobs_model(tmp_path: Path, monkeypatch: object) -> None:
    import argparse

    import pytest

    from lightrft.entrypoints.commands.demo import run

    assert f"model.path={START_MODEL}" in TTRL_OVERRIDES
    monkeypatch.chdir(tmp_path)  # type: ignore[attr-defined]
    args = argparse.Namespace(argv=["demo", "ttrl"], resume_changing=[])
    with pytest.raises(FileNotFoundError, match="run `lightrft demo` first"):
        run(args, ["ttrl"])
    # a main job without its step-5 checkpoint (only 10 and 15 left) is refused the same way
    for step in (10, 15):
        (tmp_path / "runs" / "demo" / "checkpoints" / f"step_{step:08d}").mkdir(parents=True)
    with pytest.raises(FileNotFoundError, match="run `lightrft demo` first"):
        run(args, ["ttrl"])


def test_ttrl_demo_exports_its_starting_model_once(tmp_path: Path, monkeypatch: object) -> None:
    """The main job's step-5 checkpoint becomes runs/demo_step_5_model (outside the run
    directory: an export never writes into one) before TTRL starts, and an existing export
    is used as it is."""
    import lightrft.entrypoints.jobs.checkpoint_export as export_job
    from lightrft.entrypoints.jobs.checkpoint_export import Exported
    from lightrft.entrypoints.recipes.ttrl import ttrl_overrides

    calls: list[tuple[Path, Path, int | None]] = []

    def fake_export(
        run_dir: Path, out: Path, step: int | None = None, *, force: bool = False
    ) -> Exported:
        calls.append((run_dir, out, step))
        out.mkdir(parents=True)
        return Exported(step=step or 0, model=out, adapter=None)

    monkeypatch.chdir(tmp_path)  # type: ignore[attr-defined]
    monkeypatch.setattr(export_job, "export_checkpoint", fake_export)  # type: ignore[attr-defined]
    for step in (5, 10, 15):
        (tmp_path / "runs" / "demo" / "checkpoints" / f"step_{step:08d}").mkdir(parents=True)
    overrides = ttrl_overrides(["train.seed=1"])
    assert calls == [(Path("runs/demo"), Path(START_MODEL), 5)]
    assert Path("runs/demo") not in Path(START_MODEL).parents
    assert overrides[-1] == "train.seed=1" and (tmp_path / START_MODEL).is_dir()
    ttrl_overrides([])
    assert len(calls) == 1


def test_prm_demo_trains_the_prm_and_both_arms_from_the_warmed_policy(
    tmp_path: Path, monkeypatch: object
) -> None:
    from lightrft.entrypoints.recipes import prm

    calls: dict[str, object] = {}

    def warmup(model, options, overrides):  # type: ignore[no-untyped-def]
        calls["warmup"] = (model, list(overrides))
        return {"path": "WARM"}

    def prm_stage(policy, options, overrides, base=None):  # type: ignore[no-untyped-def]
        calls["prm"] = (policy, base)
        return {"path": "PRM"}

    def prm_base(policy, options, overrides):  # type: ignore[no-untyped-def]
        calls["prm_base"] = (policy, options.prm_base_steps)
        return {"path": "BASE2"}

    def grpo(name, sources, estimator, data, options, overrides):  # type: ignore[no-untyped-def]
        calls[name] = (list(overrides), [s["type"] for s in sources])
        return {}

    fakes = (("warmup_stage", warmup), ("_prm_stage", prm_stage), ("_grpo_stage", grpo))
    for name, fake in (*fakes, ("prm_base_stage", prm_base)):
        monkeypatch.setattr(prm, name, fake)  # type: ignore[attr-defined]
    options = prm.PrmDemoOptions(run_dir=tmp_path / "d", train_problems=2, eval_problems=2)
    summary = prm.run_prm_demo(options, ["model.path=BASE", "train.seed=3"])
    assert calls["warmup"] == ("BASE", ["model.path=BASE", "train.seed=3"])  # starts at BASE
    assert calls["prm"] == ("WARM", "WARM") and summary["warmup"] == {"path": "WARM"}
    assert "prm_base" not in calls  # prm_base_steps 0: the PRM starts from the warmed policy
    based = replace(options, run_dir=tmp_path / "b", prm_base_steps=5)
    assert prm.run_prm_demo(based, ["model.path=BASE"])["prm_base"] == {"path": "BASE2"}
    assert calls["prm_base"] == ("WARM", 5) and calls["prm"] == ("WARM", "BASE2")
    for name, sources in (("grpo_outcome", ["math"]), ("grpo_process", ["math", "process_rm"])):
        overrides, types = calls[name]  # type: ignore[misc]
        assert overrides[-1] == "model.path=WARM" and types == sources
    problems = [json.loads(line) for line in (tmp_path / "d/data/eval.jsonl").open()]
    for row in problems:  # the default task: three operations on medium numbers
        question = row["prompt"].split("\n")[0]
        assert question.count(". ") == 4 and 10 <= int(question.split(".")[0].split()[-1]) <= 19


def test_prm_demo_tiny_profile_makes_a_fresh_model_per_seed_and_its_settings_reach_the_stages(
    tmp_path: Path, monkeypatch: object
) -> None:
    import argparse

    from lightrft.entrypoints.recipes import prm
    from lightrft.entrypoints.recipes.prm_options import POLICY_PROFILES

    calls: dict[str, object] = {}

    def warmup(model, options, overrides):  # type: ignore[no-untyped-def]
        calls["warmup"] = (model, options.warmup_steps, options.warmup_lr)
        return {"path": "WARM"}

    def grpo(name, sources, estimator, data, options, overrides):  # type: ignore[no-untyped-def]
        calls[name] = options.policy
        return {}

    monkeypatch.setattr(prm, "warmup_stage", warmup)  # type: ignore[attr-defined]
    monkeypatch.setattr(prm, "_grpo_stage", grpo)  # type: ignore[attr-defined]
    parser = argparse.ArgumentParser()
    prm._add_arguments(parser)
    args = parser.parse_args(
        ["--policy", "tiny", "--run-dir", str(tmp_path / "t"), "--prm-model", "P", "--prm-lr", "1"]
    )
    args.argv = []
    options = prm.options_of(args)
    assert options.policy == "tiny" and options.difficulty == "small" and options.prm_lr == 1.0
    assert options.warmup_steps == POLICY_PROFILES["tiny"].fields["warmup_steps"]
    assert options.step_threshold == 0.5 and options.chain_length == 3  # the defaults
    summaries = [prm.run_prm_demo(options, [f"train.seed={seed}"]) for seed in (4, 5)]
    fresh = tmp_path / "t" / "scratch_policy"
    assert calls["warmup"] == (str(fresh), 900, 2e-3)
    assert calls["grpo_outcome"] == calls["grpo_process"] == "tiny"
    assert (fresh / "config.json").is_file() and summaries[1]["prm"]["path"] == "P"
    prm.run_prm_demo(options, ["model.path=GIVEN"])  # a given model: none made
    assert calls["warmup"][0] == "GIVEN"
    no_threshold = parser.parse_args(["--step-threshold", "none"])
    no_threshold.argv = []
    assert prm.options_of(no_threshold).step_threshold is None
    assert prm.options_of(no_threshold).policy == "smollm2"


def test_prm_demo_tiny_arms_use_the_profile_grpo_settings(
    tmp_path: Path, monkeypatch: object
) -> None:
    from lightrft.entrypoints.jobs import training
    from lightrft.entrypoints.recipes import prm

    configs = []

    def train(config, next_command=None):  # type: ignore[no-untyped-def]
        configs.append(config)
        return {"steps": 0}

    monkeypatch.setattr(training, "train", train)  # type: ignore[attr-defined]
    data = (tmp_path / "a.jsonl", tmp_path / "b.jsonl")
    for policy in ("smollm2", "tiny"):
        options = prm.PrmDemoOptions.for_policy(policy, run_dir=tmp_path / policy)
        prm._grpo_stage("x", [{"type": "math"}], "grpo", data, options, ["optim.lr=3e-4"])
    smollm2, tiny = configs
    assert (smollm2.train.total_steps, smollm2.rollout.prompts_per_step) == (16, 8)
    assert (tiny.train.total_steps, tiny.rollout.prompts_per_step) == (60, 16)
    assert tiny.algorithm.process_weight == 0.25 and smollm2.algorithm.process_weight == 1.0
    assert tiny.algorithm.advantage_estimator == "grpo"  # the arm passes its estimator
    assert tiny.rollout.n_samples_per_prompt == 8 and tiny.eval.every == 20
    assert smollm2.optim.lr == tiny.optim.lr == 3e-4  # the user's overrides come last


def test_prm_demo_names_an_unknown_policy_profile() -> None:
    import pytest

    from lightrft.entrypoints.recipes.prm_options import PrmDemoOptions

    with pytest.raises(ValueError, match="policy 'huge' not among smollm2, tiny"):
        PrmDemoOptions.for_policy("huge")


def test_prm_demo_arms_share_their_data_and_the_held_out_chains_are_the_same_for_every_seed(
    tmp_path: Path, monkeypatch: object
) -> None:
    from lightrft.entrypoints.recipes import prm

    calls: list[tuple[str, str, tuple[Path, Path]]] = []

    def grpo(name, sources, estimator, data, options, overrides):  # type: ignore[no-untyped-def]
        calls.append((name, estimator, data))
        return {"data": [p.read_text() for p in data]}

    monkeypatch.setattr(prm, "_grpo_stage", grpo)  # type: ignore[attr-defined]
    summaries = []
    for seed in (0, 1):
        options = prm.PrmDemoOptions(
            run_dir=tmp_path / f"s{seed}", train_problems=6, eval_problems=4, chain_length=2,
            prm_model=tmp_path / "prm", warmup_steps=0,
        )  # fmt: skip
        summaries.append(prm.run_prm_demo(options, [f"train.seed={seed}"]))
    assert [(n, e) for n, e, _ in calls] == [
        ("grpo_outcome", "grpo"), ("grpo_process", "grpo")  # the PRM's mean: one more reward
    ] * 2  # fmt: skip
    for summary in summaries:
        assert summary["outcome_only"] == summary["process"]  # the same prompt files
        assert not summary["prm"]["trained_here"]
    (train0, eval0), (train1, eval1) = (s["outcome_only"]["data"] for s in summaries)
    assert eval0 == eval1 and train0 != train1
    rows = [json.loads(line) for line in eval0.splitlines()]
    assert len(rows) == 4 and all(r.keys() == {"prompt", "reference"} for r in rows)
    for row in rows:  # two operations, the answer their result
        question = row["prompt"].split("\n")[0]
        assert question.count(". ") == 3, question  # start, two operations, then the question


def test_prm_demo_names_an_unknown_prm_data_source(tmp_path: Path) -> None:
    import pytest

    from lightrft.entrypoints.recipes import prm

    options = prm.PrmDemoOptions(run_dir=tmp_path, prm_data="mine")
    with pytest.raises(ValueError, match="prm_data must be one of own, synthetic, got 'mine'"):
        prm._prm_rows(None, options, [])


def test_prm_demo_process_arm_takes_step_rewards_or_one_aggregated_reward(
    tmp_path: Path, monkeypatch: object
) -> None:
    from lightrft.entrypoints.recipes import prm

    arms: list[tuple[str, list[dict[str, object]]]] = []

    def grpo(name, sources, estimator, data, options, overrides):  # type: ignore[no-untyped-def]
        arms.append((estimator, sources))
        return {}

    monkeypatch.setattr(prm, "_grpo_stage", grpo)  # type: ignore[attr-defined]
    for aggregate in ("steps", "mean"):
        options = prm.PrmDemoOptions(
            run_dir=tmp_path / aggregate, train_problems=2, eval_problems=2, warmup_steps=0,
            prm_model=tmp_path / "prm", prm_aggregate=aggregate,
        )  # fmt: skip
        prm.run_prm_demo(options)
    (_, outcome), (steps_estimator, steps_sources), _, (mean_estimator, mean_sources) = arms
    assert [s["type"] for s in outcome] == ["math"]
    assert steps_estimator == "process_grpo" and steps_sources[1]["aggregate"] == "steps"
    assert mean_estimator == "grpo" and mean_sources[1]["aggregate"] == "mean"
    assert mean_sources[1]["step_threshold"] == 0.5 and mean_sources[1]["path"] == str(
        tmp_path / "prm"
    )
