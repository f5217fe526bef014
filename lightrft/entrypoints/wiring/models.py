"""Model-side providers: accelerator, collective, tokenizer, policy, reference, critic,
engine and strategy, each one registry lookup (see :mod:`.registries`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from lightrft.adapters.accelerators import detect_accelerator
from lightrft.adapters.distributed import (
    LocalCollective,
    TorchCollective,
    init_process_group_from_env,
)
from lightrft.adapters.hf import default_model_path
from lightrft.domain.advantages import ADVANTAGE_ESTIMATORS
from lightrft.domain.ports import (
    Accelerator,
    Collective,
    Critic,
    Policy,
    ReferenceModel,
    RolloutEngine,
    Strategy,
)
from lightrft.entrypoints.config import RunConfig
from lightrft.entrypoints.wiring import (  # noqa: F401  (registers the built-ins)
    engines,
    model_loaders,
    reward_model_builders,  # noqa: F401  (registers)
    reward_sources,
    strategies,
)
from lightrft.entrypoints.wiring.registries import (
    ENGINES,
    MODEL_LOADERS,
    STRATEGIES,
    BuildContext,
    ModelLoader,
    build,
)


def build_accelerator(config: RunConfig) -> Accelerator:
    choice = config.backend.accelerator
    return detect_accelerator(None if choice == "auto" else choice)


def device_of(accelerator: Any) -> torch.device:
    return accelerator.device()  # type: ignore[no-any-return]


def build_collective(accelerator: Accelerator) -> Collective:
    env = init_process_group_from_env(accelerator)
    return TorchCollective() if env.world_size > 1 else LocalCollective()


def model_path(config: RunConfig) -> Path:
    return Path(config.model.path) if config.model.path else default_model_path()


def loader(config: RunConfig) -> ModelLoader:
    """The model loader of ``model.modality``."""
    return MODEL_LOADERS.get(config.model.modality)


def build_tokenizer(config: RunConfig, path: Path) -> Any:
    return loader(config).tokenizer(config, path)


def build_context(
    config: RunConfig,
    path: Path,
    device: torch.device,
    tokenizer: Any,
    policy: Callable[[], Policy],
) -> BuildContext:
    return BuildContext(config, path, device, tokenizer, policy)


def build_policy(config: RunConfig, path: Path, device: torch.device, tokenizer: Any) -> Policy:
    """The trained policy (its builder sees a context whose ``policy`` it must not call)."""
    context = build_context(config, path, device, tokenizer, _no_policy_yet)
    return loader(config).policy(context)


def _no_policy_yet() -> Policy:
    raise RuntimeError("the policy's own builder cannot ask the context for the policy")


def build_reference(context: BuildContext) -> ReferenceModel | None:
    """The frozen reference, or None when the KL coefficient is 0 (no KL term)."""
    if context.config.algorithm.kl_coef == 0:
        return None
    return loader(context.config).reference(context)


def build_critic(context: BuildContext) -> Critic | None:
    """The value model, or None when the advantage estimator needs no values."""
    if not ADVANTAGE_ESTIMATORS.get(context.config.algorithm.advantage_estimator).needs_values:
        return None
    return loader(context.config).critic(context)


def build_engine(context: BuildContext) -> RolloutEngine:
    return build(ENGINES, context.config.rollout.engine, context)  # type: ignore[no-any-return]


def build_strategy(context: BuildContext, module: torch.nn.Module | None) -> Strategy | None:
    """The training backend for ``module`` (prepared), or None when there is no module."""
    if module is None:
        return None
    strategy: Strategy = build(STRATEGIES, context.config.backend.strategy, context)
    strategy.prepare(module)
    return strategy
