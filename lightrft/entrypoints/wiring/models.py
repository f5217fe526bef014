"""Model-side adapters: accelerator, collective, policy, reference, critic, engine, strategy."""

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
from lightrft.adapters.hf import (
    HfPolicy,
    HfReferenceModel,
    HfRolloutEngine,
    LoraParams,
    ModelLoadParams,
    default_model_path,
    load_causal_lm,
    load_tokenizer,
)
from lightrft.adapters.hf.critic import HfCritic
from lightrft.domain.ports import Accelerator, Collective, Strategy
from lightrft.entrypoints.config import RunConfig

DTYPES = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}


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


def build_tokenizer(config: RunConfig, path: Path) -> Any:
    return load_tokenizer(path, trust_remote_code=config.model.trust_remote_code)


def _load(config: RunConfig, path: Path, device: torch.device, *, train: bool) -> Any:
    m = config.model
    params = ModelLoadParams(
        dtype=DTYPES[m.dtype],  # type: ignore[arg-type]
        attn_implementation=m.attn_implementation,
        gradient_checkpointing=m.gradient_checkpointing and train,
        trust_remote_code=m.trust_remote_code,
    )
    return load_causal_lm(path, device, params)


def build_policy(config: RunConfig, path: Path, device: torch.device, tokenizer: Any) -> HfPolicy:
    lora = config.model.lora
    params = None
    if lora.rank > 0:
        targets = lora.target_modules
        params = LoraParams(
            rank=lora.rank,
            alpha=lora.alpha,
            dropout=lora.dropout,
            target_modules=targets if isinstance(targets, str) else tuple(targets),
        )
    return HfPolicy(
        _load(config, path, device, train=True),
        lora=params,
        packing=config.model.packing,
        prefix_sharing=config.model.prefix_sharing,
        chunk_size=config.model.logprob_chunk_size,
        tokenizer=tokenizer,
    )


def build_reference(config: RunConfig, path: Path, device: torch.device) -> HfReferenceModel | None:
    if config.algorithm.kl_coef == 0:
        return None
    return HfReferenceModel(
        _load(config, path, device, train=False),
        device,
        packing=config.model.packing,
        prefix_sharing=config.model.prefix_sharing,
        chunk_size=config.model.logprob_chunk_size,
    )


def build_critic(config: RunConfig, path: Path, device: torch.device) -> HfCritic | None:
    from lightrft.domain.advantages import ADVANTAGE_ESTIMATORS

    if not ADVANTAGE_ESTIMATORS.get(config.algorithm.advantage_estimator).needs_values:
        return None
    return HfCritic(_load(config, path, device, train=True))


def build_engine(
    config: RunConfig,
    path: Path,
    device: torch.device,
    tokenizer: Any,
    policy: Callable[[], HfPolicy],
) -> HfRolloutEngine:
    """The rollout engine: on the policy's own module when the config shares weights (then
    ``policy`` is called), else on a model of its own."""
    shared = config.engine_shares_weights()
    return HfRolloutEngine(
        policy().module if shared else _load(config, path, device, train=False),  # type: ignore[arg-type]
        tokenizer,
        device,
        sleep_mode="offload",
        max_batch_size=config.rollout.max_batch_size,
        shares_policy_weights=shared,
        compile_decode=config.rollout.compile_decode,
    )


def build_strategy(
    config: RunConfig, device: torch.device, module: torch.nn.Module | None
) -> Strategy | None:
    """The training backend for ``module`` (prepared), or None when there is no module."""
    if module is None:
        return None
    optim = config.optimizer_params()
    backend = config.backend
    strategy: Strategy
    if backend.strategy == "single":
        from lightrft.adapters.single_device import SingleDeviceStrategy

        strategy = SingleDeviceStrategy(device, optim)
    elif backend.strategy == "fsdp2":
        from lightrft.adapters.fsdp import Fsdp2Strategy

        strategy = Fsdp2Strategy(
            optim,
            device=device,
            mixed_precision="bf16" if config.model.dtype == "bf16" else "fp32",
            cpu_offload=backend.cpu_offload,
        )
    else:
        from lightrft.adapters.deepspeed import DeepSpeedStrategy

        strategy = DeepSpeedStrategy(
            optim,
            device=device,
            zero_stage=backend.zero_stage,
            bf16=config.model.dtype == "bf16",
            cpu_offload=backend.cpu_offload,
        )
    strategy.prepare(module)
    return strategy
