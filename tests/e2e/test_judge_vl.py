"""A vision-language judge end to end on a tiny random Qwen2-VL with image preference pairs
(HPDv3's layout): one GRPO step where the policy is the judge (``judge_pairs`` prompts with
both images, the ``judge_agreement`` reward), and ``lightrft rm rejection-sample`` sampling
judgements of the image pairs, then ``--sft`` fine-tuning the model on kept image rows."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest

from lightrft.adapters.datasets.judge_pairs import load_judge_pairs
from lightrft.domain.types import Completion, PromptRecord, SamplingParams
from lightrft.entrypoints.jobs.judge_rejection import (
    RejectionSampleOptions,
    rejection_sample_judgements,
)
from lightrft.entrypoints.roots.judge_sampling import JudgeSampler, judge_tokenizer
from tests.helpers.cli_runs import run_command, run_train
from tests.helpers.plugin_components import ScriptedEngine
from tests.helpers.reward_set_files import colour_png, write_json
from tests.helpers.tiny_multimodal import save_tiny_vl_model


def hpdv3_pairs(root: Path, n: int = 4) -> Path:
    """``n`` HPDv3 rows (``train.json``) over three flat-coloured images."""
    for i, rgb in enumerate([(200, 0, 0), (0, 200, 0), (0, 0, 200)]):
        colour_png(root / "images" / f"{i}.png", rgb)
    rows = [
        {"prompt": f"a shape {i}", "path1": f"images/{i % 3}.png",
         "path2": f"images/{(i + 1) % 3}.png"}
        for i in range(n)
    ]  # fmt: skip
    return write_json(root / "train.json", rows)


@pytest.mark.slow  # 1.3 s a step; 2.5 min with imports at load 18 on the 2-core CPU
def test_one_grpo_step_of_a_vision_language_judge(tmp_path: Path) -> None:
    model = save_tiny_vl_model(tmp_path / "model", byte_level=True)
    run_dir = tmp_path / "run"
    run_train(
        model,
        run_dir,
        "model.modality=vision-language",
        "model.min_pixels=784",
        "model.max_pixels=3136",
        f"data.train.path=hpdv3:{hpdv3_pairs(tmp_path / 'hpdv3')}",
        "data.train.preprocessor=judge_pairs",
        "reward.sources=[{type: judge_agreement}]",
        "train.total_steps=1",
        "rollout.prompts_per_step=2",
        "rollout.n_samples_per_prompt=2",
        "rollout.max_new_tokens=6",
        "data.eval=null",
        "logging.progress=false",
        "checkpoint.export_final=false",
    )
    (step,) = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert step["step"] == 1 and "train/grad_norm" in step  # the judge's update ran
    # a random judge writes no readable verdict: agreement 0, each one counted unparsable
    assert 0.0 <= step["reward/judge_agreement/agreement"] <= 1.0
    assert step["reward/judge_agreement/unparsable"] <= 4
    samples = [json.loads(line) for line in (run_dir / "samples.jsonl").read_text().splitlines()]
    assert len(samples) == 4
    for sample in samples:  # both responses shown as images, the verdict asked for
        assert sample["prompt"].count("<|vision_start|>") == 2
        assert "Response 1:" in sample["prompt"] and "[[A]]" in sample["prompt"]


class SecondJudge(ScriptedEngine):
    """Always names response 2 (``[[B]]``): kept exactly for the pairs labelled B."""

    def generate(self, prompts: list[PromptRecord], sampling: SamplingParams) -> list[Completion]:
        assert all(p.multimodal for p in prompts)  # the judge prompts carry their images
        return [
            Completion(i, (5,), "<think>the second</think> [[B]]", "stop")
            for i in range(len(prompts))
            for _ in range(sampling.n)
        ]


@pytest.mark.slow  # 2.8 min with imports and two processes at load 18 on the 2-core CPU
def test_rejection_sampling_of_image_pairs_samples_and_fine_tunes(tmp_path: Path) -> None:
    model = save_tiny_vl_model(tmp_path / "model", byte_level=True)
    data = f"hpdv3:{hpdv3_pairs(tmp_path / 'hpdv3', 8)}"
    labels = [row["reference"] for row in load_judge_pairs(data, judge_tokenizer(str(model)))[0]]
    assert 0 < labels.count("B") < 8
    # the verb on the model's own HF engine: judgements sampled with the images
    out = tmp_path / "sampled" / "rows.jsonl"
    command = [sys.executable, "-m", "lightrft.entrypoints.cli", "rm", "rejection-sample"]
    flags = ["--model", str(model), "--modality", "vision-language", "--data", data]
    flags += ["--n", "2", "--max-new-tokens", "4", "--out", str(out)]
    run_command([*command, *flags])
    summary = json.loads(out.with_name("rows.jsonl.summary.json").read_text())
    assert summary["pairs"] == 8 and summary["samples"] == 16
    # a scripted judge, so that some judgements are kept; then --sft on the tiny Qwen2-VL
    tokenizer = judge_tokenizer(str(model))
    options = RejectionSampleOptions(
        model=str(model),
        data=data,
        out=tmp_path / "kept" / "rows.jsonl",
        n=2,
        batch_size=4,
        modality="vision-language",
        sft_run_dir=tmp_path / "sft",
        sft_overrides=("sft.total_steps=1", "sft.batch_size=2", "sft.micro_batch_size=2"),
    )
    summary = rejection_sample_judgements(options, JudgeSampler(tokenizer, SecondJudge((), "")))
    assert summary["pairs_with_a_kept_judgement"] == labels.count("B")  # only those labelled B
    assert summary["kept"] == 2 * labels.count("B")
    rows = [json.loads(line) for line in options.out.read_text().splitlines()]
    for row in rows:
        user, assistant = row["messages"]
        images = [part for part in user["content"] if part.get("type") == "image"]
        assert len(images) == 2 and all((options.out.parent / p["image"]).is_file() for p in images)
        assert assistant["content"].endswith("[[B]]")
    assert summary["sft"]["steps"] == 1 and math.isfinite(summary["sft"]["train_loss_first"])
