"""The roots of ``lightrft rm train`` (a scalar reward model) and ``lightrft rm eval``.

Training: the backend (accelerator, collective, the strategy of ``strategy`` over the
optimizer settings), then, once the data is read, the reward model's parts. The shared
builders read a :class:`RunConfig`; the root makes it from the options' typed values
(``backend.strategy``, ``optim.lr`` / ``max_grad_norm`` / ``weight_decay`` / ``betas``,
``model.dtype``; every other section
at its default)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import torch

from lightrft.adapters.checkpoint import LocalCheckpointStore
from lightrft.adapters.hf.loading import DTypeName
from lightrft.adapters.hf.multimodal_inputs import PromptEncoder
from lightrft.adapters.reward_models import (
    HfScalarRewardModel,
    RewardLoraParams,
    RewardModelCard,
    load_reward_tokenizer,
)
from lightrft.adapters.tracking.factory import make_tracker
from lightrft.domain.ports import CheckpointStore, Collective, Strategy, Tracker
from lightrft.entrypoints.config import RunConfig
from lightrft.entrypoints.config.loading import config_from_tree
from lightrft.entrypoints.roots.policy_free import policy_free_context
from lightrft.entrypoints.wiring import models
from lightrft.entrypoints.wiring.model_loaders import DTYPES
from lightrft.entrypoints.wiring.registrations import register_builtins
from lightrft.entrypoints.wiring.registries import STRATEGIES, build
from lightrft.entrypoints.wiring.scalar_reward_models import (
    load_scalar_rm,
    reward_media_encoder,
    scalar_rm_parts,
)


@dataclass(frozen=True)
class RmBackendOptions:
    """How a reward model trains: the strategy's name, optimizer and weight precision."""

    strategy: str = "single"
    lr: float = 1e-5
    max_grad_norm: float = 1.0
    weight_decay: float = 0.0
    betas: tuple[float, float] = (0.9, 0.999)
    dtype: str = "fp32"
    zero_stage: int | None = None  # strategy deepspeed: its ZeRO stage
    max_pixels: int | None = None
    trackers: tuple[str, ...] = ()  # besides jsonl
    wandb_project: str | None = None


class RewardModelRoot:
    """The backend of ``rm train`` (built at once); the tokenizer, the reward model and the
    run's outputs on request (the data is read between them)."""

    def __init__(self, backend: RmBackendOptions) -> None:
        register_builtins()
        strategy: Any = backend.strategy
        if backend.zero_stage is not None:
            if backend.strategy != "deepspeed":
                raise ValueError(
                    f"zero_stage {backend.zero_stage} needs strategy deepspeed, not "
                    f"{backend.strategy!r}"
                )
            strategy = {"type": "deepspeed", "zero_stage": backend.zero_stage}
        model: dict[str, Any] = {"dtype": backend.dtype}
        if backend.max_pixels is not None:
            model["max_pixels"] = backend.max_pixels
        tree: dict[str, Any] = {
            "backend": {"strategy": strategy},
            "optim": {
                "lr": backend.lr,
                "max_grad_norm": backend.max_grad_norm,
                "weight_decay": backend.weight_decay,
                "betas": list(backend.betas),
            },
            "model": model,
        }
        self._backend = backend
        self.config = config_from_tree(RunConfig, tree)
        accelerator = models.build_accelerator(self.config)
        self.device: torch.device = models.device_of(accelerator)
        self.collective: Collective = models.build_collective(self.config, accelerator)
        context = policy_free_context(
            self.config, Path("."), self.device, who="reward-model training"
        )
        self.strategy: Strategy = build(STRATEGIES, self.config.backend.strategy, context)
        self._dtype = cast(DTypeName, DTYPES[backend.dtype])

    def media_encoder(self, path: Path, modality: str, tokenizer: Any) -> PromptEncoder | None:
        """The prompt encoder of a ``modality`` backbone in ``path`` (None for text)."""
        encoder: PromptEncoder | None = reward_media_encoder(path, modality, self.config, tokenizer)
        return encoder

    def tokenizer(self, path: Path) -> Any:
        """The tokenizer of the backbone in ``path`` (its pad token set for scoring)."""
        return load_reward_tokenizer(path)

    def reward_model(
        self,
        path: Path,
        encoder: PromptEncoder | None,
        tokenizer: Any,
        card: RewardModelCard,
        lora: RewardLoraParams | None,
        *,
        init_seed: int,
    ) -> HfScalarRewardModel:
        """The backbone in ``path`` with a fresh score head (the scoring parts of
        ``card.heads``, LoRA adapters) seeded by ``init_seed``, of ``card.modality``, on this
        root's device."""
        parts = scalar_rm_parts(
            path,
            card.modality,
            encoder,
            tokenizer,
            self.device,
            dtype=self._dtype,
            init_seed=init_seed,
        )
        return HfScalarRewardModel(
            parts.classifier,
            tokenizer,
            self.device,
            card=card,
            lora=lora,
            media=parts.media,
            init_seed=init_seed,
        )

    def outputs(self, out: Path) -> tuple[Tracker | None, CheckpointStore]:
        """The run's metrics (``metrics.jsonl``, written by rank 0) and checkpoints in ``out``."""
        names = ["jsonl", *self._backend.trackers]
        wandb = {"project": self._backend.wandb_project} if self._backend.wandb_project else None
        opts = {"wandb": wandb} if wandb and "wandb" in names else {}
        tracker = make_tracker(names, out, **opts) if self.collective.rank == 0 else None
        return tracker, LocalCheckpointStore(out / "checkpoints")


def saved_reward_model(model: str | Path, *, micro_batch_size: int) -> HfScalarRewardModel:
    """``rm eval``'s model: a saved scalar reward model on the detected device."""
    register_builtins()
    config = config_from_tree(RunConfig, {})
    device = models.device_of(models.build_accelerator(config))
    return load_scalar_rm(model, device, config, micro_batch_size=micro_batch_size)
