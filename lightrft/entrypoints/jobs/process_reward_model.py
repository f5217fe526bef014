"""`lightrft rm train --kind process`: a process reward model trained on step-labelled rows.

The rows (:mod:`~lightrft.adapters.datasets.step_label_rows`, or the built-in chain-arithmetic
set, :mod:`~lightrft.adapters.datasets.synthetic_steps`) are checked before the weights load.
The base causal LM is trained by :class:`~lightrft.application.process_reward_training.
ProcessRewardTrainer` to put the positive label token above the negative one at the end of
good steps and below it at bad ones. ``OUTPUT`` is a run directory like ``rm train``'s
(``checkpoints/``, ``metrics.jsonl``, ``summary.json``) with ``model/``: the LM in
safetensors, its tokenizer, ``lightrft_process_reward.json`` and a README model card (the
separator and label tokens); the ``process_rm`` reward source loads it.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import structlog

from lightrft.adapters.datasets import PromptFormat, PromptRenderer
from lightrft.adapters.datasets.step_label_rows import (
    StepRowSpec,
    in_memory_step_rows,
    load_step_rows,
)
from lightrft.adapters.datasets.synthetic_steps import synthetic_step_rows
from lightrft.adapters.hf import default_model_path
from lightrft.adapters.reward_models.encoding import PairEncoding
from lightrft.adapters.reward_models.process_card import ProcessRewardCard
from lightrft.application.process_reward_training import ProcessRewardTrainer
from lightrft.application.reward_model_training import RewardTrainParams
from lightrft.domain.process_rewards import StepLabelledExample
from lightrft.entrypoints.field_copy import copy_fields
from lightrft.entrypoints.jobs.reward_model import SYNTHETIC, RowSourceOptions, held_out_split
from lightrft.entrypoints.next_command import NextCommand
from lightrft.entrypoints.roots.process_reward_model import process_reward_model
from lightrft.entrypoints.roots.reward_model import RewardModelRoot, RmBackendOptions
from lightrft.entrypoints.run_dir.directory import ResumeChoice, trim_logs_after
from lightrft.entrypoints.run_dir.final_export import FinalState, write_final
from lightrft.entrypoints.run_dir.guard import RunRequest, guard_run_directory
from lightrft.entrypoints.run_dir.identity import RM_IDENTITY, IdentityKeys, fingerprint, flatten

log = structlog.get_logger(__name__)

PRM_IDENTITY = IdentityKeys(include=(*RM_IDENTITY.include, "card.*"), exclude=RM_IDENTITY.exclude)
"""A PRM run: the reward model's identity plus its separator and label tokens."""


@dataclass(frozen=True)
class StepDataOptions(RowSourceOptions):
    """Step-labelled rows: the file's keys (or the synthetic set's size)."""

    spec: StepRowSpec = field(default_factory=StepRowSpec)
    chain_length: int = 3  # operations per built-in chain (``--data synthetic``)


@dataclass(frozen=True)
class PrmCardOptions:
    """The separator and the label tokens the model is trained (and scored) with."""

    separator: str = "\n\n"
    positive_token: str = "+"
    negative_token: str = "-"


@dataclass(frozen=True)
class PrmTrainOptions:
    """Everything ``lightrft rm train --kind process`` takes."""

    output: Path
    model: str | None = None
    data: StepDataOptions = field(default_factory=StepDataOptions)
    card: PrmCardOptions = field(default_factory=PrmCardOptions)
    train: RewardTrainParams = field(default_factory=RewardTrainParams)
    lr: float = 1e-5
    max_grad_norm: float = 1.0
    max_length: int | None = 512
    strategy: str = "single"
    dtype: str = "fp32"
    modality: str = "text"
    resume: ResumeChoice = False
    overwrite: bool = False
    resume_changing: tuple[str, ...] = ()
    next_command: NextCommand = field(default_factory=NextCommand)


def _read(
    source: str, renderer: PromptRenderer, data: StepDataOptions, seed: int
) -> tuple[list[StepLabelledExample], int]:
    if source == SYNTHETIC:
        rows = synthetic_step_rows(data.num_synthetic, seed, length=data.chain_length)
        return in_memory_step_rows(rows, renderer, data.spec, name=f"synthetic-{seed}")
    examples, skipped = load_step_rows(source, renderer, data.spec)
    if skipped:
        log.warning("prm.data.skipped_rows", source=source, skipped=skipped)
    if not examples:
        raise ValueError(f"{source}: no usable step-labelled rows ({skipped} bad rows skipped)")
    return examples, skipped


def step_splits(
    renderer: PromptRenderer, data: StepDataOptions, seed: int
) -> tuple[list[StepLabelledExample], list[StepLabelledExample], int]:
    """Train rows, held-out rows (the eval file, or a seeded fraction) and bad rows skipped."""
    rows, skipped = _read(data.data, renderer, data, seed)
    if data.eval_data is not None:
        held_out, more = _read(data.eval_data, renderer, data, seed + 1)
        return rows, held_out, skipped + more
    train, held_out = held_out_split(rows, data.eval_fraction, seed)
    return train, held_out, skipped


def train_process_reward_model(options: PrmTrainOptions) -> dict[str, Any]:
    """Trains, evaluates and exports a process reward model; returns the summary."""
    path = Path(options.model) if options.model else default_model_path()
    root = RewardModelRoot(
        copy_fields(RmBackendOptions, options, "strategy lr max_grad_norm dtype")
    )
    request = RunRequest(
        run_dir=Path(options.output),
        resume=options.resume,
        overwrite=options.overwrite,
        keys=PRM_IDENTITY,
        fingerprint=lambda: fingerprint(flatten(asdict(options)), PRM_IDENTITY, path),
        resume_changing=options.resume_changing,
    )
    with guard_run_directory(request, root.collective) as start:
        out = Path(options.output)
        seed = options.train.seed
        tokenizer = root.tokenizer(path)
        renderer = PromptRenderer(
            tokenizer,
            PromptFormat(system_prompt=options.data.system_prompt, render=options.data.render),
        )
        train_rows, eval_rows, skipped = step_splits(renderer, options.data, seed)
        card = ProcessRewardCard(
            **asdict(options.card),
            encoding=PairEncoding(not renderer.uses_chat_template, options.max_length),
            modality=options.modality,
        )
        prm = process_reward_model(root, path, tokenizer, card, options.dtype)
        root.strategy.prepare(prm.module)
        tracker, store = root.outputs(out)
        trainer = ProcessRewardTrainer(
            prm,
            root.strategy,
            train_rows,
            options.train,
            eval_rows=eval_rows,
            collective=root.collective,
            checkpoints=store,
            tracker=tracker,
        )
        before = trainer.evaluate(eval_rows).metrics("before") if eval_rows else {}
        resumed_from = trainer.step if start.resumes and trainer.resume() else None
        main = root.collective.rank == 0
        if resumed_from is not None and main:
            trim_logs_after(out, resumed_from)
        start.record(trainer.step)
        log.info("prm.start", rows=len(train_rows), held_out=len(eval_rows))
        trainer.run(resume=False)
        summary: dict[str, Any] = {
            "steps": trainer.step,
            "train_rows": len(train_rows),
            "eval_rows": len(eval_rows),
            "skipped_rows": skipped,
            "resumed_from": resumed_from,
            "base_model": str(path),  # the model the PRM started from
            **before,
            **(trainer.evaluate(eval_rows).metrics() if eval_rows else {}),
            "separator": card.separator,
            "label_tokens": [card.positive_token, card.negative_token],
        }
        final = FinalState(store, trainer.step, trainer.save_checkpoint, out / "checkpoints")
        kept = final.secure()
        if main:
            state = dict(root.strategy.full_state())
            summary["model"] = str(
                write_final(
                    out / "model",
                    lambda tmp: prm.export_hf(tmp, state=state),
                    kept,
                    options.next_command,
                    state=state,
                )
            )
            summary["reward_source"] = {
                "type": "process_rm",
                "path": summary["model"],
                "aggregate": "min",
            }
            (out / "summary.json").write_text(json.dumps(summary, indent=2))
        if tracker is not None:
            tracker.close()
        return summary
