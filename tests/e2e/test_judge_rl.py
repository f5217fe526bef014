"""RL of a generative judge from the CLI: ``lightrft train grpo`` with preference pairs as
judge prompts (``data.train.preprocessor=judge_pairs``) and the ``judge_agreement`` reward,
2 steps on the tiny model. The judge's verdicts are scripted (``tests.helpers.judge_scripts``:
it prefers the response starting with "Good"), so the reward is known by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers.cli_runs import run_train
from tests.helpers.judge_scripts import write_judge_pairs


def test_a_judge_trained_by_grpo_earns_its_agreement_with_the_labels(
    tiny_dir: Path, tmp_path: Path
) -> None:
    run_dir = tmp_path / "run"
    run_train(
        tiny_dir,
        run_dir,
        "plugins=[tests.helpers.judge_scripts]",
        "rollout.engine=preferring_judge",
        f"data.train.path={write_judge_pairs(tmp_path / 'pairs.jsonl')}",
        "data.train.preprocessor=judge_pairs",
        "data.train.shuffle=false",
        "reward.sources=[{type: judge_agreement}]",
        "train.total_steps=2",
        "rollout.prompts_per_step=2",
        "rollout.n_samples_per_prompt=2",
        "rollout.max_new_tokens=16",
        "data.eval=null",
        "logging.progress=false",
        "checkpoint.export_final=false",
    )
    steps = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [s["step"] for s in steps] == [1, 2]
    # By hand: step 1 judges pairs 0 and 1 (the judge agrees with both labels), step 2 pairs
    # 2 and 3 (agrees with pair 2 only). Per pair, sample 0 reasons in <think> (format 1),
    # sample 1 does not: an agreeing pair scores 2 + 1, a disagreeing one 1 + 0.
    assert [s["reward/judge_agreement/agreement"] for s in steps] == [1.0, 0.5]
    assert [s["reward/judge_agreement/format_rate"] for s in steps] == [0.5, 0.5]
    assert [s["reward/mean"] for s in steps] == pytest.approx(
        [(2 + 1 + 2 + 1) / 4, (2 + 1 + 1 + 0) / 4]
    )
    assert all("train/policy_loss" in s for s in steps)  # the judge (policy) was updated
    samples = [json.loads(line) for line in (run_dir / "samples.jsonl").read_text().splitlines()]
    for sample in samples:
        good_first = "Response 1: Good" in sample["prompt"]
        verdict = sample["response"].rsplit(" ", 1)[-1]
        assert verdict == ("[[A]]" if good_first else "[[B]]")
        shown_first = sample["prompt"].split("Response 1: ", 1)[1].split(".", 1)[0] + "."
        label_is_first = (shown_first.startswith("Good")) != sample["uid"].endswith(":3")
        agrees = (verdict == "[[A]]") == label_is_first
        assert sample["reward"] == float(agrees) + float(sample["response"].startswith("<think>"))
