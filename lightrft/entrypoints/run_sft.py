"""`lightrft sft`: supervised fine-tuning from a config; exports a model `lightrft train` loads.

The run directory gets ``config.yaml``, ``metrics.jsonl`` (``train/loss``, ``eval/loss`` ...),
``checkpoints/`` (with ``checkpoint.every``; ``checkpoint.resume`` continues exactly) and
``final_model/`` (a plain Hugging Face directory, LoRA merged, tokenizer included); with
``model.lora.rank`` > 0 also ``final_adapter/`` (the PEFT adapter alone).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import structlog

from lightrft.adapters.tracking.progress import ProgressTracker
from lightrft.application.sft_trainer import SftParams, SftTrainer
from lightrft.entrypoints.api import build_container
from lightrft.entrypoints.config import RunConfig
from lightrft.entrypoints.config.loading import dump_config
from lightrft.entrypoints.run_training import export_policy
from lightrft.entrypoints.wiring import models
from lightrft.entrypoints.wiring.sft_data import build_sft_data

log = structlog.get_logger(__name__)


def sft(config: RunConfig) -> dict[str, Any]:
    """Runs the configured SFT; returns a summary (losses, steps, data stats, paths)."""
    s = config.sft
    tokenizer = models.build_tokenizer(config, models.model_path(config))
    train_data = build_sft_data(s.train_data, tokenizer)
    assert train_data is not None
    eval_data = build_sft_data(s.eval_data, tokenizer)
    pad = getattr(tokenizer, "pad_token_id", None)
    params = SftParams(
        epochs=s.epochs,
        batch_size=s.batch_size,
        micro_batch_size=s.micro_batch_size,
        max_tokens_per_micro_batch=s.max_tokens_per_micro_batch,
        total_steps=s.total_steps,
        seed=s.seed,
        pad_token_id=int(pad) if pad is not None else 0,
        eval_every=s.eval_every if eval_data is not None else None,
        eval_batch_size=s.eval_batch_size,
        checkpoint_every=config.checkpoint.every,
    )
    # data-parallel ranks: every process, or one per sequence-parallel group (whose ranks
    # hold the same rows)
    processes = models.process_rank(models.build_accelerator(config))[1]
    world = processes // config.backend.sequence_parallel_size
    steps = s.total_steps or s.epochs * (len(train_data) // (s.batch_size * world))
    # the strategy builders size the LR schedule from train.total_steps (one step per step);
    # the model builders seed fresh weights (LoRA adapters) from train.seed: SFT's own seed
    train = config.train.model_copy(update={"total_steps": max(steps, 1), "seed": s.seed})
    config = config.model_copy(update={"train": train})
    container = build_container(config, tokenizer=tokenizer)
    collective = container.collective()
    main = container.process()[0] == 0  # with sequence parallelism, not every DP rank 0
    run_dir = Path(config.logging.run_dir)
    if main:
        run_dir.mkdir(parents=True, exist_ok=True)
        (run_dir / "config.yaml").write_text(dump_config(config))
    tracker = container.tracker()
    if main:
        tracker = ProgressTracker(tracker, max(steps, 1), enabled=config.logging.progress)
    trainer = SftTrainer(
        policy=container.policy(),
        strategy=container.policy_strategy(),
        train_data=train_data,
        params=params,
        tracker=tracker,
        checkpoints=container.checkpoints() if config.checkpoint.every else None,
        eval_data=eval_data,
        collective=collective,
    )
    log.info("sft.start", run_dir=str(run_dir), rows=len(train_data), steps=trainer.total_steps)
    try:
        history = trainer.run(resume=config.checkpoint.resume)
    finally:
        tracker.close()
    summary = _summary(trainer, history, run_dir, train_data.stats)
    if trainer.initial_eval is not None:
        summary["eval_loss_before"] = trainer.initial_eval["eval/loss"]
    if config.checkpoint.export_final:
        summary.update(export_policy(container, run_dir, main))
    if main:
        (run_dir / "summary.json").write_text(json.dumps(summary, indent=2))
    log.info("sft.done", **summary)
    return summary


def _summary(
    trainer: SftTrainer, history: list[dict[str, float]], run_dir: Path, stats: Any
) -> dict[str, Any]:
    summary: dict[str, Any] = {
        "steps": trainer.step,
        "run_dir": str(run_dir),
        "train_rows": stats.kept,
        "skipped_rows": stats.skipped_bad_rows,
        "truncated_rows": stats.truncated,
    }
    losses = [m["train/loss"] for m in history if "train/loss" in m]
    if losses:
        summary["train_loss_first"], summary["train_loss_last"] = losses[0], losses[-1]
    evals = [m["eval/loss"] for m in history if "eval/loss" in m]
    if evals:
        summary["eval_loss_after"] = evals[-1]
    return summary
