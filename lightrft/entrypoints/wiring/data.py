"""Data-side adapters: prompt sources, reward sources, trackers, checkpoint store."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lightrft.adapters.checkpoint import LocalCheckpointStore
from lightrft.adapters.datasets import (
    HfPromptDataset,
    PromptFormat,
    RowSpec,
    arithmetic_prompts,
    gsm8k_prompts,
)
from lightrft.adapters.tracking import make_tracker
from lightrft.domain.ports import CheckpointStore, PromptSource, RewardSource, Tracker
from lightrft.entrypoints.config import RunConfig
from lightrft.entrypoints.config.sections import DatasetConfig
from lightrft.entrypoints.wiring import reward_sources  # noqa: F401  (registers the built-ins)
from lightrft.entrypoints.wiring.registries import REWARD_SOURCES, BuildContext, build


def build_prompts(dataset: DatasetConfig | None, tokenizer: Any) -> PromptSource | None:
    """A prompt source for ``dataset`` (``None`` stays ``None``: no evaluation set)."""
    if dataset is None:
        return None
    fmt = PromptFormat(
        system_prompt=dataset.system_prompt,
        render="auto" if dataset.apply_chat_template else "plain",
        max_prompt_tokens=dataset.max_prompt_length,
    )
    if dataset.path is None:
        extra = {} if dataset.instruction is None else {"instruction": dataset.instruction}
        return arithmetic_prompts(
            dataset.num_builtin,
            dataset.seed,
            dataset.difficulty,
            tokenizer=tokenizer,
            prompt_format=fmt,
            **extra,
        )
    path = Path(dataset.path)
    if not path.exists():
        raise FileNotFoundError(f"dataset {path} does not exist")
    if dataset.preprocessor == "gsm8k":
        extra = {} if dataset.instruction is None else {"instruction": dataset.instruction}
        source: PromptSource = gsm8k_prompts(
            path, tokenizer, prompt_format=fmt, on_bad_row=dataset.on_bad_row, **extra
        )
    else:
        spec = RowSpec(
            input_key=dataset.input_key,
            reference_key=dataset.reference_key,
            on_bad_row=dataset.on_bad_row,
        )
        source = HfPromptDataset(path, tokenizer, spec=spec, prompt_format=fmt)
    if dataset.max_samples is not None and dataset.max_samples < len(source):
        return _Truncated(source, dataset.max_samples)
    return source


class _Truncated:
    """The first ``limit`` prompts of a source."""

    def __init__(self, source: PromptSource, limit: int) -> None:
        self._source, self._limit = source, limit

    def __len__(self) -> int:
        return self._limit

    def __getitem__(self, index: int) -> Any:
        if not 0 <= index < self._limit:
            raise IndexError(index)
        return self._source[index]


def build_rewards(context: BuildContext) -> list[RewardSource]:
    """One reward source per ``reward.sources`` section, from its registered builder."""
    return [build(REWARD_SOURCES, section, context) for section in context.config.reward.sources]


def build_tracker(config: RunConfig, rank: int) -> Tracker:
    if rank != 0:
        return NullTracker()
    opts: dict[str, Any] = {}
    if "wandb" in config.logging.trackers:
        opts["wandb"] = {"project": config.logging.wandb_project}
    return make_tracker(list(config.logging.trackers), Path(config.logging.run_dir), **opts)


class NullTracker:
    """The tracker of ranks other than 0: records nothing."""

    def log_metrics(self, metrics: Any, step: int) -> None:
        """Ignores ``metrics``."""

    def log_samples(self, rows: Any, step: int) -> None:
        """Ignores ``rows``."""

    def close(self) -> None:
        """Nothing to release."""


def build_checkpoints(config: RunConfig, rank: int, world_size: int) -> CheckpointStore:
    root = Path(config.logging.run_dir) / "checkpoints"
    if world_size > 1:
        root = root / f"rank_{rank:05d}"  # every rank keeps its own shard of the run state
    return LocalCheckpointStore(root, keep_last=config.checkpoint.keep_last)
