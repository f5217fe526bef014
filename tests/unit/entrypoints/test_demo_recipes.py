"""The built-in jobs' settings: what each demo trains on and how it is measured."""

from __future__ import annotations

import json
from pathlib import Path

from lightrft.entrypoints.config.loading import load_config
from lightrft.entrypoints.jobs.demo import _held_out_accuracy
from lightrft.entrypoints.recipes.demo import DEMO_OVERRIDES, MAIN_JOB_MODEL
from lightrft.entrypoints.recipes.rlhf import GRPO_OVERRIDES, INSTRUCTION, seed_of
from lightrft.entrypoints.recipes.ttrl import TTRL_OVERRIDES


def test_grpo_demo_pays_nothing_for_an_unfinished_answer() -> None:
    config = load_config(None, DEMO_OVERRIDES, algorithm="grpo")
    assert config.reward.truncated_reward == 0.0
    assert config.train.seed == 0
    assert config.data.eval is not None and config.data.eval.builtin_split == "heldout"


def test_main_job_samples_16_prompts_x_4_and_ttrl_and_distill_keep_8_at_0_8() -> None:
    from lightrft.entrypoints.recipes.distill import DEMO_OVERRIDES as BASE
    from lightrft.entrypoints.recipes.distill import DISTILL_OVERRIDES

    main = load_config(None, DEMO_OVERRIDES, algorithm="grpo").rollout
    assert (main.prompts_per_step, main.n_samples_per_prompt, main.temperature) == (16, 4, 0.6)
    ttrl = load_config(None, DEMO_OVERRIDES + TTRL_OVERRIDES, algorithm="grpo").rollout
    assert (ttrl.prompts_per_step, ttrl.n_samples_per_prompt, ttrl.temperature) == (8, 8, 0.8)
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

    assert f"model.path={MAIN_JOB_MODEL}" in TTRL_OVERRIDES
    monkeypatch.chdir(tmp_path)  # type: ignore[attr-defined]
    args = argparse.Namespace(argv=["demo", "ttrl"], resume_changing=[])
    with pytest.raises(FileNotFoundError, match="run `lightrft demo` first"):
        run(args, ["ttrl"])
