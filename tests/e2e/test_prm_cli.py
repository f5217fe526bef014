"""`lightrft rm train --kind process` in-process on the tiny random model: a PRM trained
from a step-labelled file (Math-Shepherd layout), exported with safetensors and its card,
then loaded as the ``process_rm`` reward source from the summary and used to score."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from lightrft.adapters.reward_models.process_card import ProcessRewardCard
from lightrft.domain.types import Completion, PromptRecord, RewardSample
from lightrft.entrypoints.cli import main
from lightrft.entrypoints.config.loading import load_config
from lightrft.entrypoints.recipes.rlhf import metric_rows
from lightrft.entrypoints.wiring import models
from lightrft.entrypoints.wiring.registries import REWARD_SOURCES, BuildContext, build
from tests.helpers.cli_runs import TINY


def load_source(entry: dict[str, Any]) -> Any:
    config = load_config(None, {"reward.sources": [entry]})
    (section,) = config.reward.typed_sources
    device = models.device_of(models.build_accelerator(config))
    return build(REWARD_SOURCES, section, BuildContext(config, Path("."), device, None, None))  # type: ignore[arg-type]


def shepherd_rows(n: int) -> list[dict[str, str]]:
    rows = []
    for i in range(n):
        marks = ["+" if (i >> k) & 1 else "-" for k in range(3)]
        steps = [f"s{k} {'ok' if m == '+' else 'no'}" for k, m in enumerate(marks)]
        text = f"Q{i % 4}: " + "".join(f"{s} ки" for s in steps)
        label = f"Q{i % 4}: " + "".join(f"{s} {m}" for s, m in zip(steps, marks, strict=True))
        rows.append({"input": text, "label": label})
    return rows


def test_rm_train_kind_process_end_to_end(tiny_dir: Path, tmp_path: Path) -> None:
    data = tmp_path / "shepherd.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in shepherd_rows(40)))
    out = tmp_path / "prm"
    argv = [
        "rm", "train", "--kind", "process", "--output", str(out), "--model", str(tiny_dir),
        "--data", str(data), "--separator", "ки", "--batch-size", "8", "--micro-batch-size", "8",
        "--epochs", "2", "--lr", "1e-2", "--eval-fraction", "0.2", "--max-length", "120",
    ]  # fmt: skip
    assert main(argv) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["steps"] == 8 and summary["train_rows"] == 32 and summary["eval_rows"] == 8
    assert summary["separator"] == "ки" and summary["label_tokens"] == ["+", "-"]
    assert summary["eval/step_accuracy"] > summary["before/step_accuracy"]
    model = Path(summary["model"])
    assert (model / "model.safetensors").is_file()
    card = json.loads((model / "lightrft_process_reward.json").read_text())
    assert card["separator"] == "ки" and card["negative_token"] == "-"
    assert 'separator: `"\\u043a\\u0438"`' in (model / "README.md").read_text()
    source = load_source({**summary["reward_source"], "aggregate": "last"})
    record = PromptRecord("q", "Q1: ", (1,))
    result = source.score([RewardSample(record, Completion(0, (2,), "s0 ok ки s1 no ки", "stop"))])
    assert result.scores.shape == (1,) and 0.0 < float(result.scores[0]) < 1.0
    assert float(result.metrics["steps_mean"]) == 2.0


def test_flags_of_another_kind_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["rm", "train", "--kind", "process", "--output", str(tmp_path / "x"), "--margin", "1"]
    assert main(argv) == 2
    assert "--margin applies to --kind scalar, not process" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


def test_grpo_with_step_rewards_runs_on_the_tiny_model(tiny_dir: Path, tmp_path: Path) -> None:
    """`process_grpo` with a `process_rm` source in `steps` mode: the step rewards reach the
    estimator (its process metrics are logged) and the run ends."""
    prm = tmp_path / "prm_dir"
    shutil.copytree(tiny_dir, prm)
    ProcessRewardCard(separator="e").save(prm)  # a frequent byte: several steps per answer
    run = tmp_path / "run"
    sources = (
        f"reward.sources=[{{type: math}}, {{type: process_rm, path: '{prm}', aggregate: steps}}]"
    )
    argv = [
        "train", "grpo", f"model.path={tiny_dir}", f"logging.run_dir={run}",
        "algorithm.advantage_estimator=process_grpo", sources, *TINY, "rollout.max_new_tokens=12",
    ]  # fmt: skip
    assert main(argv) == 0
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    logged = {k: v for row in rows for k, v in row.items()}
    steps = [k for k in logged if k.endswith("process/steps_per_sample")]
    assert steps, sorted(logged)
    assert any(k.endswith("reward/process_rm/steps_mean") for k in logged)


TINY_ARMS = [
    "train.total_steps=1", "rollout.prompts_per_step=2", "rollout.n_samples_per_prompt=2",
    "rollout.max_new_tokens=8", "eval.max_prompts=2", "eval.every=1",
]  # fmt: skip
"""The demo's GRPO arms at one step on the tiny model."""


def test_demo_prm_runs_every_stage_on_the_tiny_model(tiny_dir: Path, tmp_path: Path) -> None:
    """`lightrft demo prm` end to end on the tiny model (no learning asserted): the warm-up
    SFT, the PRM on the warmed policy's own labelled samples, then GRPO from the warmed policy
    with the outcome reward alone and with the PRM's mean step verdict added."""
    run = tmp_path / "demo"
    argv = [
        "demo", "--run-dir", str(run), "--warmup-steps", "1", "--prm-rows", "32",
        "--prm-samples", "2", "--prm-steps", "1", "--chain-length", "2", "prm",
        f"model.path={tiny_dir}", *TINY_ARMS,
    ]  # fmt: skip
    assert main(argv) == 0
    summary = json.loads((run / "summary.json").read_text())
    warm = Path(summary["warmup"]["path"])
    assert summary["warmup"]["steps"] == 1 and (warm / "config.json").is_file()
    assert summary["prm"]["trained_here"] and Path(summary["prm"]["path"]).is_dir()
    assert 0.0 <= summary["prm"]["step_accuracy_after"] <= 1.0
    own = summary["prm"]["rows"]["train"]
    assert 16 <= own["rows"] <= 32 and 0.0 <= own["good_step_share"] <= 1.0
    for arm, name in (("outcome_only", "grpo_outcome"), ("process", "grpo_process")):
        assert summary[arm]["steps"] == 1 and summary[arm]["math_after"] is not None
        recorded = (run / name / "config.yaml").read_text()
        assert str(warm) in recorded  # the arms start from the warmed policy
    process_rows = metric_rows(run / "grpo_process")  # the PRM's mean verdict, one reward
    assert any("reward/prm/step_pass_rate" in k for row in process_rows for k in row)
    assert not any("reward/prm" in k for row in metric_rows(run / "grpo_outcome") for k in row)
    rows = [json.loads(line) for line in (run / "data" / "prm_train.jsonl").open()]
    assert len(rows) == own["rows"]
    for row in rows:
        assert len(row["steps"]) == len(row["labels"]) and set(row["labels"]) <= {"+", "-"}
        assert all(step.strip() and "\n" not in step for step in row["steps"])


def test_demo_prm_trains_on_built_in_rows_without_a_warm_up(tiny_dir: Path, tmp_path: Path) -> None:
    """``--prm-data synthetic --warmup-steps 0 --prm-aggregate steps``: the PRM on built-in
    chains in the phrasings asked for, the arms from the policy as given, the process arm's
    step rewards through ``process_grpo``."""
    run = tmp_path / "demo"
    argv = [
        "demo", "--run-dir", str(run), "--warmup-steps", "0", "--prm-data", "synthetic",
        "--prm-rows", "20", "--prm-steps", "1", "--prm-phrasings", "symbol,sentence",
        "--prm-aggregate", "steps", "prm",
        f"model.path={tiny_dir}", *TINY_ARMS,
    ]  # fmt: skip
    assert main(argv) == 0
    summary = json.loads((run / "summary.json").read_text())
    assert "warmup" not in summary and summary["prm"]["rows"] == {"rows": "synthetic"}
    assert summary["process"]["steps"] == 1
    process_rows = metric_rows(run / "grpo_process")
    assert any("process/steps_per_sample" in k for row in process_rows for k in row)
    assert not any("process/" in k for row in metric_rows(run / "grpo_outcome") for k in row)
    rows = [json.loads(line) for line in (run / "data" / "prm_train.jsonl").open()]
    firsts = {row["steps"][0].startswith("The result of") for row in rows}
    assert firsts == {True, False}  # both phrasings among the PRM's rows


def test_demo_prm_refuses_an_unknown_phrasing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["demo", "--run-dir", str(tmp_path / "d"), "--prm-phrasings", "symbol,poem", "prm"]
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "argument --prm-phrasings: ['poem'] not among symbol, sentence" in err
    assert not (tmp_path / "d").exists()


@pytest.mark.slow  # about 50 s: the profile's 28800 warm-up rows twice and 512 held-out samples
def test_demo_prm_tiny_policy_is_made_here_and_runs_every_stage(tmp_path: Path) -> None:
    """``--policy tiny`` with no model.path: a fresh byte-level model is written under the run
    directory and goes through the warm-up, the PRM on its own samples and both arms."""
    run = tmp_path / "demo"
    argv = [
        "demo", "--run-dir", str(run), "--policy", "tiny", "--warmup-steps", "1",
        "--prm-base-steps", "1", "--prm-rows", "32", "--prm-samples", "2", "--prm-steps", "1",
        "prm",
        "train.seed=2", *TINY_ARMS,
    ]  # fmt: skip
    assert main(argv) == 0
    summary = json.loads((run / "summary.json").read_text())
    made = run / "scratch_policy"
    config = json.loads((made / "config.json").read_text())
    assert config["vocab_size"] == 259 and config["hidden_size"] == 128  # the profile's model
    warmup_config = (run / "warmup" / "config.yaml").read_text()
    assert str(made) in warmup_config and "lr: 0.002" in warmup_config
    assert summary["prm"]["trained_here"] and summary["prm"]["rows"]["train"]["rows"] == 32
    base = summary["prm_base"]["path"]  # the PRM's backbone: the warmed policy, trained more
    assert summary["warmup"]["path"] in (run / "prm_base" / "config.yaml").read_text()
    assert json.loads((run / "prm" / "summary.json").read_text())["base_model"] == base
    for name in ("grpo_outcome", "grpo_process"):
        recorded = (run / name / "config.yaml").read_text()
        assert summary["warmup"]["path"] in recorded and "n_samples_per_prompt: 2" in recorded
    process = (run / "grpo_process" / "config.yaml").read_text()
    assert "advantage_estimator: process_grpo" in process and "aggregate: steps" in process
    assert "process_weight: 0.25" in process
    assert "accuracy_sources:\n  - math" in process  # eval/accuracy is the math reward's
