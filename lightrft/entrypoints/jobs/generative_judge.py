"""`lightrft rm train --kind generative`: supervised fine-tuning of a generative judge on
(prompt, response, judgement / label) rows, scored by held-out verdict accuracy.

The rows become SFT examples laid out exactly as the ``generative_rm`` reward source prompts
its judge (:mod:`~lightrft.adapters.reward_models.judge_training`): the loss is on the
judgement tokens (reasoning + verdict + EOS) only. Training is ``lightrft sft``'s job
(:func:`~lightrft.entrypoints.jobs.sft.sft`, the same ``SftTrainer``, run directory guard,
checkpoints, resume and export), given these examples.

Verdict accuracy is measured through the reward source itself, before training on the base
model and after it on the exported judge: a ``generative_rm`` section (this run's template,
verdict kind, scale, labels) is built through the reward-source registry, generates a
greedy verdict for each held-out row, and its parser reads it; a verdict is correct when it
reads as the row's score. ``OUTPUT`` holds what ``lightrft sft`` writes (``final_model/``,
``checkpoints/``, ``metrics.jsonl`` ...) and ``summary.json`` with both accuracies and the
``reward_source`` section that loads the judge.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import structlog

from lightrft.adapters.datasets.judge_rows import (
    JudgeRowSpec,
    VerdictFormat,
    in_memory_judge_rows,
    load_judge_rows,
    synthetic_judge_rows,
)
from lightrft.adapters.datasets.rendering import PromptFormat, PromptRenderer
from lightrft.adapters.datasets.sft_rows import SftDataset, SftStats
from lightrft.adapters.reward_models.generative import DEFAULT_TEMPLATE
from lightrft.adapters.reward_models.judge_training import JudgeEncoding, judge_verdict_accuracy
from lightrft.adapters.reward_models.verdict import verdict_parser
from lightrft.domain.judge import JudgedResponse, VerdictAccuracy
from lightrft.entrypoints.config.loading import load_sft_config
from lightrft.entrypoints.config.reward_model_configs import GenerativeRmConfig
from lightrft.entrypoints.config.sft_run_config import SftRunConfig
from lightrft.entrypoints.jobs.reward_model import SYNTHETIC, RowSourceOptions, held_out_split
from lightrft.entrypoints.jobs.sft import sft
from lightrft.entrypoints.next_command import NextCommand
from lightrft.entrypoints.roots.judge import base_model_path, built_judge
from lightrft.entrypoints.roots.sft import sft_tokenizer
from lightrft.entrypoints.run_dir.directory import ResumeChoice

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class JudgeDataOptions(RowSourceOptions):
    """Judge rows: the file's columns and verdict checks."""

    spec: JudgeRowSpec = field(default_factory=JudgeRowSpec)


@dataclass(frozen=True)
class JudgeFormat:
    """How the judge is prompted and read: the ``generative_rm`` source's settings."""

    template: str = DEFAULT_TEMPLATE
    verdict: str = "score"
    max_score: float = 10.0
    labels: Mapping[str, float] = field(default_factory=lambda: {"A": 1.0, "B": 0.0})
    max_new_tokens: int = 256

    def source(self, path: str | Path, dtype: str) -> GenerativeRmConfig:
        """The ``reward.sources`` entry that loads the judge at ``path`` this way."""
        return GenerativeRmConfig.model_validate(
            {
                "path": str(path),
                "template": None if self.template == DEFAULT_TEMPLATE else self.template,
                "verdict": self.verdict,
                "max_score": self.max_score,
                "labels": dict(self.labels),
                "max_new_tokens": self.max_new_tokens,
                "dtype": dtype,
            }
        )


@dataclass(frozen=True)
class JudgeTrainOptions:
    """Everything ``lightrft rm train --kind generative`` takes."""

    output: Path
    model: str | None = None
    data: JudgeDataOptions = field(default_factory=JudgeDataOptions)
    judge: JudgeFormat = field(default_factory=JudgeFormat)
    batch_size: int = 16
    micro_batch_size: int = 8
    epochs: int = 1
    total_steps: int | None = None
    lr: float = 1e-5
    max_length: int = 1024
    eval_every: int | None = None
    eval_batch_size: int = 32  # held-out rows per verdict-generation batch
    checkpoint_every: int | None = None
    seed: int = 0
    strategy: str = "single"
    dtype: str = "fp32"
    lora_rank: int = 0
    lora_alpha: float = 16.0
    resume: ResumeChoice = False
    overwrite: bool = False
    resume_changing: tuple[str, ...] = ()
    next_command: NextCommand = field(default_factory=NextCommand)


def _config(options: JudgeTrainOptions) -> SftRunConfig:
    """The SFT run config: the schedule, optimizer, backend and run directory of ``options``;
    ``sft.train_data.path`` names the judge rows (the run's identity on resume)."""
    values: dict[str, Any] = {
        "model.path": options.model,
        "model.dtype": options.dtype,
        "model.lora.rank": options.lora_rank,
        "model.lora.alpha": options.lora_alpha,
        "optim.lr": options.lr,
        "backend.strategy": options.strategy,
        "logging.run_dir": str(options.output),
        "logging.overwrite": options.overwrite,
        "logging.progress": False,
        "checkpoint.every": options.checkpoint_every,
        "checkpoint.resume": options.resume,
        "checkpoint.resume_changing": list(options.resume_changing),
        "checkpoint.export_final": True,
        "sft.train_data.path": None if options.data.data == SYNTHETIC else options.data.data,
        "sft.train_data.num_builtin": options.data.num_synthetic,
        "sft.train_data.seed": options.seed,
        "sft.batch_size": options.batch_size,
        "sft.micro_batch_size": options.micro_batch_size,
        "sft.epochs": options.epochs,
        "sft.total_steps": options.total_steps,
        "sft.eval_every": options.eval_every,
        "sft.seed": options.seed,
    }
    return load_sft_config(None, {key: value for key, value in values.items() if value is not None})


def _read(
    source: str, renderer: PromptRenderer, data: JudgeDataOptions, verdict: VerdictFormat, seed: int
) -> tuple[list[JudgedResponse], int]:
    """The rows of ``source`` and the number of bad rows skipped."""
    if source == SYNTHETIC:
        rows = synthetic_judge_rows(data.num_synthetic, seed)
        return in_memory_judge_rows(rows, renderer, verdict, data.spec, name=f"synthetic-{seed}")
    rows_read, skipped = load_judge_rows(source, renderer, verdict, data.spec)
    if skipped:
        log.warning("rm.judge.data.skipped_rows", source=source, skipped=skipped)
    if not rows_read:
        raise ValueError(f"{source}: no usable judge rows ({skipped} bad rows skipped)")
    return rows_read, skipped


def judge_splits(
    tokenizer: Any, data: JudgeDataOptions, verdict: VerdictFormat, seed: int
) -> tuple[list[JudgedResponse], list[JudgedResponse], int]:
    """(train rows, held-out rows, bad rows skipped): the eval file, or a seeded
    ``eval_fraction`` of the data."""
    renderer = PromptRenderer(
        tokenizer, PromptFormat(system_prompt=data.system_prompt, render=data.render)
    )
    rows, skipped = _read(data.data, renderer, data, verdict, seed)
    if data.eval_data is not None:
        held_out, more = _read(data.eval_data, renderer, data, verdict, seed + 1)
        return rows, held_out, skipped + more
    train, held_out = held_out_split(rows, data.eval_fraction, seed)
    return train, held_out, skipped


def _examples(encoding: JudgeEncoding, rows: Sequence[JudgedResponse], skipped: int) -> SftDataset:
    examples = encoding.examples(rows)
    return SftDataset(examples, SftStats(len(rows) + skipped, len(examples), skipped))


def measure_judge(
    config: SftRunConfig, section: GenerativeRmConfig, rows: Sequence[JudgedResponse], batch: int
) -> tuple[VerdictAccuracy, list[str]]:
    """Verdict accuracy on ``rows`` of the judge ``section`` loads, built through the
    reward-source registry exactly as a run's ``reward.sources`` entry is."""
    judge = built_judge(config, section)
    try:
        return judge_verdict_accuracy(judge, rows, batch_size=batch)
    finally:
        judge.close()


def train_generative_judge(options: JudgeTrainOptions) -> dict[str, Any]:
    """Measures the base model, trains the judge, measures the export; returns the summary."""
    config = _config(options)
    base = base_model_path(config)
    tokenizer = sft_tokenizer(config)
    j = options.judge
    verdict = verdict_parser(j.verdict, max_score=j.max_score, labels=j.labels)
    train_rows, held_out, skipped = judge_splits(tokenizer, options.data, verdict, options.seed)
    encoding = JudgeEncoding(tokenizer, j.template, options.max_length)
    train = _examples(encoding, train_rows, skipped)
    evaluation = _examples(encoding, held_out, 0)
    if not train:
        raise ValueError(f"no judge row fits max_length {options.max_length} tokens")
    log.info("rm.judge.start", rows=len(train), held_out=len(held_out), too_long=encoding.too_long)
    batch = options.eval_batch_size
    before, _ = measure_judge(config, j.source(base, options.dtype), held_out, batch)
    summary = sft(config, next_command=options.next_command, data=(train, evaluation or None))
    section = j.source(summary["final_model"], options.dtype)
    after, verdicts = measure_judge(config, section, held_out, batch)
    summary.update(
        {
            "kind": "generative",
            "held_out_rows": len(held_out),
            "too_long_rows": encoding.too_long,
            "verdict_accuracy_before": before.accuracy,
            "verdict_accuracy_after": after.accuracy,
            "unparsable_rate_before": before.unparsable_rate,
            "unparsable_rate_after": after.unparsable_rate,
            "verdict_examples_after": verdicts[:3],
            "reward_source": {"type": section.type, **section.model_dump(exclude_defaults=True)},
        }
    )
    (Path(options.output) / "summary.json").write_text(json.dumps(summary, indent=2))
    log.info("rm.judge.done", before=before.accuracy, after=after.accuracy)
    return summary
