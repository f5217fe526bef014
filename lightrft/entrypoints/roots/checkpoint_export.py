"""The root of ``lightrft checkpoints export``: a run directory's config (RL or SFT), its
policy built again on the host as training built it, and the merger of its strategy's
per-rank states."""

from __future__ import annotations

from pathlib import Path
from typing import cast

import torch

from lightrft.entrypoints.config.loading import load_sft_config
from lightrft.entrypoints.config.sft_run_config import SftRunConfig
from lightrft.entrypoints.roots.model_run import ExportablePolicy
from lightrft.entrypoints.wiring import models
from lightrft.entrypoints.wiring.checkpoint_merge import CHECKPOINT_MERGERS, Merger
from lightrft.entrypoints.wiring.registrations import register_builtins

HOST = torch.device("cpu")


class CheckpointExportRoot:
    """The run's config (read at once) and its policy and merger (on request)."""

    def __init__(self, config_file: Path) -> None:
        register_builtins()
        # an SFT run's config is an RL run's with an sft section: it reads either
        self.config: SftRunConfig = load_sft_config(
            config_file, ["backend.accelerator=cpu", "backend.nproc_per_node=1"]
        )

    def policy(self) -> ExportablePolicy:
        """The policy on the host: the run's loader, dtype and LoRA wrapping, fresh weights."""
        path = models.model_path(self.config)
        tokenizer = models.build_tokenizer(self.config, path)
        return cast(ExportablePolicy, models.build_policy(self.config, path, HOST, tokenizer))

    def merger(self) -> Merger:
        """How the run's strategy's per-rank states become one module state."""
        return CHECKPOINT_MERGERS.get(self.config.backend.strategy.type)
