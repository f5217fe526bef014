"""`lightrft sft`: supervised fine-tuning from a config; exports a model `lightrft train` loads.

The run directory gets ``config.yaml``, ``history.jsonl``, ``metrics.jsonl`` (``train/loss``,
``eval/loss`` ...), ``checkpoints/`` (with ``checkpoint.every``, and the final state before the
export; ``checkpoint.resume`` continues exactly) and ``final_model/`` (a plain Hugging Face
directory, LoRA merged, tokenizer included); with ``model.lora.rank`` > 0 also
``final_adapter/`` (the PEFT adapter alone).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import structlog

from lightrft.adapters.datasets.sft_rows import SftDataset, SftStats
from lightrft.adapters.tracking.progress import ProgressTracker
from lightrft.application.sft_trainer import SftParams, SftTrainer
from lightrft.domain.checkpoint_fit import CheckpointShapeError
from lightrft.entrypoints.config.sft_run_config import SftRunConfig
from lightrft.entrypoints.field_copy import copy_fields
from lightrft.entrypoints.jobs.training import export_policy
from lightrft.entrypoints.next_command import NextCommand
from lightrft.entrypoints.roots.model_run import ModelRunRoot
from lightrft.entrypoints.roots.sft import sft_inputs, sft_root
from lightrft.entrypoints.run_dir.directory import trim_logs_after
from lightrft.entrypoints.run_dir.final_export import FinalState
from lightrft.entrypoints.run_dir.guard import (
    RunStart,
    config_request,
    guard_run_directory,
    recorded_config_text,
)
from lightrft.entrypoints.run_dir.identity import SFT_IDENTITY
from lightrft.entrypoints.run_dir.log_write import full_disk_explained

log = structlog.get_logger(__name__)


def sft(
    config: SftRunConfig,
    *,
    next_command: NextCommand | None = None,
    data: tuple[SftDataset, SftDataset | None] | None = None,
) -> dict[str, Any]:
    """Runs the configured SFT; returns a summary (losses, steps, data stats, paths).

    ``data``: (train, eval) examples built by the caller (e.g. ``rm train --kind
    generative``) instead of from ``sft.train_data`` / ``sft.eval_data``.

    The run directory is guarded like ``lightrft train``'s
    (:mod:`~lightrft.entrypoints.run_dir.guard`): locked, a previous run refused unless
    ``--resume`` / ``--overwrite``, a resume's identity checked.
    """
    s = config.sft
    inputs = sft_inputs(config, data)
    train_data, eval_data = inputs.train, inputs.eval
    params = copy_fields(
        SftParams,
        s,
        "epochs batch_size micro_batch_size max_tokens_per_micro_batch total_steps seed "
        "eval_batch_size",
        pad_token_id=inputs.pad_token_id,
        eval_every=s.eval_every if eval_data is not None else None,
        checkpoint_every=config.checkpoint.every,
    )
    # data-parallel ranks: every process, or one per sequence-parallel group (whose ranks
    # hold the same rows)
    world = inputs.processes // config.backend.sequence_parallel_size
    steps = s.total_steps or s.epochs * (len(train_data) // (s.batch_size * world))
    # the strategy builders size the LR schedule from train.total_steps (one step per step);
    # the model builders seed fresh weights (LoRA adapters) from train.seed: SFT's own seed
    train = config.train.model_copy(update={"total_steps": max(steps, 1), "seed": s.seed})
    config = config.model_copy(update={"train": train})
    root = sft_root(config, inputs.tokenizer)
    processes = root.process_collective()
    with guard_run_directory(config_request(config, SFT_IDENTITY), processes) as start:
        data = (train_data, eval_data)
        return _sft_in(config, root, start, params, data, next_command or NextCommand())


def _sft_in(
    config: SftRunConfig,
    root: ModelRunRoot,
    start: RunStart,
    params: SftParams,
    data: tuple[SftDataset, SftDataset | None],
    next_command: NextCommand,
) -> dict[str, Any]:
    train_data, eval_data = data
    collective = root.collective()
    main = root.process()[0] == 0  # with sequence parallelism, not every DP rank 0
    run_dir = Path(config.logging.run_dir)
    tracker = root.tracker()
    if main:
        tracker = ProgressTracker(
            tracker, config.train.total_steps, enabled=config.logging.progress
        )
    trainer = SftTrainer(
        policy=root.policy(),
        strategy=root.policy_strategy(),
        train_data=train_data,
        params=params,
        tracker=tracker,
        checkpoints=root.checkpoints(),  # periodic saves only with checkpoint.every
        eval_data=eval_data,
        collective=collective,
    )
    log.info("sft.start", run_dir=str(run_dir), rows=len(train_data), steps=trainer.total_steps)
    if train_data.stats.skipped_bad_rows:
        log.warning("sft.data.skipped_rows", skipped=train_data.stats.skipped_bad_rows)
    checkpoints = run_dir / "checkpoints"
    try:
        with full_disk_explained(lambda: root.checkpoints().steps(), checkpoints, next_command):
            try:
                resumed = start.resumes and trainer.resume()
            except CheckpointShapeError as exc:
                raise exc.explained(str(checkpoints), config.model.path) from None
            if resumed and main:
                trim_logs_after(run_dir, trainer.step)
            start.record(trainer.step, recorded_config_text(config))
            history = trainer.run(resume=False)
    finally:
        tracker.close()
    summary = _summary(trainer, history, run_dir, train_data.stats)
    if trainer.initial_eval is not None:
        summary["eval_loss_before"] = trainer.initial_eval["eval/loss"]
    if config.checkpoint.export_final:
        final = FinalState(
            root.checkpoints(), trainer.step, trainer.save_checkpoint, run_dir / "checkpoints"
        )
        summary.update(export_policy(root, run_dir, main, final, next_command))
    if main:
        (run_dir / "summary.json").write_text(json.dumps(summary, indent=2))
    log.info("sft.done", **summary)
    return summary


def _summary(
    trainer: SftTrainer, history: list[dict[str, float]], run_dir: Path, stats: SftStats
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
