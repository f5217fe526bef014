"""Model-side providers: accelerator, collective, tokenizer, policy, reference, critic,
engine and strategy, each one registry lookup (see :mod:`.registries`; the built-ins are
registered by :mod:`.registrations`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any, Literal

import structlog
import torch
import torch.distributed as dist

from lightrft.adapters.accelerators import detect_accelerator
from lightrft.adapters.accelerators.host_allocator import return_freed_memory_promptly
from lightrft.adapters.distributed import (
    LaunchEnv,
    LocalCollective,
    TorchCollective,
    init_process_group_from_env,
)
from lightrft.adapters.hf import HfPolicy, default_model_path
from lightrft.adapters.hf.multimodal_inputs import EncodedPromptSource, MediaRequirements
from lightrft.adapters.hf.sequence_parallel import (
    SequenceParallelGroup,
    SequenceParallelPolicy,
    sequence_parallel_groups,
)
from lightrft.adapters.hf.tokenizer_match import check_same_tokenizer
from lightrft.domain.advantages import ADVANTAGE_ESTIMATORS
from lightrft.domain.ports import (
    Accelerator,
    Collective,
    Critic,
    Policy,
    PromptSource,
    ReferenceModel,
    RolloutEngine,
    Strategy,
)
from lightrft.entrypoints.config import RunConfig
from lightrft.entrypoints.config.sections import DatasetConfig
from lightrft.entrypoints.wiring import data
from lightrft.entrypoints.wiring.registries import (
    ENGINES,
    MODEL_LOADERS,
    STRATEGIES,
    BuildContext,
    ModelLoader,
    build,
)
from lightrft.entrypoints.wiring.remote_teachers import build_remote_teacher

log = structlog.get_logger(__name__)


def build_accelerator(config: RunConfig) -> Accelerator:
    """The run's accelerator; first applies ``backend.host_allocator`` to this process (the
    accelerator is the first component a run builds)."""
    if config.backend.host_allocator == "lean":
        applied = return_freed_memory_promptly()
        log.info("backend.host_allocator", policy="lean", applied=applied)
    choice = config.backend.accelerator
    return detect_accelerator(None if choice == "auto" else choice)


def device_of(accelerator: Any) -> torch.device:
    return accelerator.device()  # type: ignore[no-any-return]


def build_sequence_parallel(
    config: RunConfig, accelerator: Accelerator
) -> tuple[SequenceParallelGroup, Any] | None:
    """This rank's sequence-parallel group and data-parallel process group when
    ``backend.sequence_parallel_size`` > 1 (collective: every rank builds them), else None."""
    size = config.backend.sequence_parallel_size
    if size == 1:
        return None
    join_process_group(config, accelerator)
    return sequence_parallel_groups(size)


def join_process_group(config: RunConfig, accelerator: Accelerator) -> LaunchEnv:
    """Joins the default group (if launched) with ``backend.collective_timeout_s``; a
    strategy that shards parameters (FSDP2, DeepSpeed) gets a one-rank group when the
    process was started alone (``lightrft train grpo --fsdp`` without ``--nproc-per-node``)."""
    timeout = timedelta(seconds=config.backend.collective_timeout_s)
    alone = config.backend.strategy.shards_parameters
    return init_process_group_from_env(accelerator, timeout=timeout, single_process_group=alone)


def build_collective(
    config: RunConfig,
    accelerator: Accelerator,
    sequence_parallel: tuple[SequenceParallelGroup, Any] | None = None,
) -> Collective:
    """Over the data-parallel ranks: all of them, or with sequence parallelism the ranks
    holding different samples (one per sequence-parallel group)."""
    env = join_process_group(config, accelerator)
    if sequence_parallel is not None:
        return TorchCollective(sequence_parallel[1])
    return TorchCollective() if env.world_size > 1 else LocalCollective()


def process_rank(config: RunConfig, accelerator: Accelerator) -> tuple[int, int]:
    """(rank, world size) of this process among all processes (for files each process
    writes: metrics and exports on rank 0, one checkpoint directory per process)."""
    join_process_group(config, accelerator)
    if not dist.is_initialized():
        return 0, 1
    return dist.get_rank(), dist.get_world_size()


def model_path(config: RunConfig) -> Path:
    return Path(config.model.path) if config.model.path else default_model_path()


def loader(config: RunConfig) -> ModelLoader:
    """The model loader of ``model.modality``."""
    return MODEL_LOADERS.get(config.model.modality)


def build_tokenizer(config: RunConfig, path: Path) -> Any:
    return loader(config).tokenizer(config, path)


def pad_token_id(tokenizer: object) -> int:
    """The tokenizer's pad token id, 0 when it has none."""
    pad = getattr(tokenizer, "pad_token_id", None)
    return int(pad) if pad is not None else 0


def build_context(
    config: RunConfig,
    path: Path,
    device: torch.device,
    tokenizer: Any,
    policy: Callable[[], Policy],
) -> BuildContext:
    return BuildContext(config, path, device, tokenizer, policy)


def build_prompt_encoder(config: RunConfig, tokenizer: Any) -> Any | None:
    """The media encoder of ``model.modality`` (None for text models), built from the model
    directory's processor without loading the model (SFT data uses it)."""
    make = loader(config).prompt_encoder
    if make is None:
        return None
    context = BuildContext(
        config, model_path(config), torch.device("cpu"), tokenizer, _no_policy_yet
    )
    return make(context)


def build_policy(
    config: RunConfig,
    path: Path,
    device: torch.device,
    tokenizer: Any,
    sequence_parallel: tuple[SequenceParallelGroup, Any] | None = None,
) -> Policy:
    """The trained policy (its builder sees a context whose ``policy`` it must not call);
    with sequence parallelism its forwards run split over the sequence-parallel group."""
    context = build_context(config, path, device, tokenizer, _no_policy_yet)
    policy = loader(config).policy(context)
    if sequence_parallel is None:
        return policy
    if not isinstance(policy, HfPolicy):
        raise ValueError(
            f"backend.sequence_parallel_size > 1 needs a text HfPolicy; model.modality "
            f"{config.model.modality!r} builds {type(policy).__name__}"
        )
    return SequenceParallelPolicy(
        policy, sequence_parallel[0], chunk_size=config.model.logprob_chunk_size
    )


def _no_policy_yet() -> Policy:
    raise RuntimeError("the policy's own builder cannot ask the context for the policy")


def build_prompt_source(
    context: BuildContext, dataset: DatasetConfig | None, section: str
) -> PromptSource | None:
    """The prompts of ``dataset`` (``None`` stays ``None``), each row checked while the data
    is built against what the modality's prompt encoder needs (placeholders, audio rate),
    then encoded into model inputs on access (text models: plain prompts)."""
    return encoded_prompts(
        context,
        lambda media: data.build_prompts(dataset, context.tokenizer, media, section),
        max_tokens=None if dataset is None else dataset.max_prompt_length,
    )


def encoded_prompts(
    context: BuildContext,
    read: Callable[[MediaRequirements | None], PromptSource | None],
    *,
    max_tokens: int | None = None,
) -> PromptSource | None:
    """The prompts ``read(media)`` builds, given what the modality's prompt encoder needs of
    every row (None for text), then encoded by it on access (text: as read); ``max_tokens``
    bounds a prompt with its media expanded."""
    make = loader(context.config).prompt_encoder
    encoder = None if make is None else make(context)
    source = read(None if encoder is None else encoder.requirements)
    if source is None or encoder is None:
        return source
    return EncodedPromptSource(source, encoder, max_tokens=max_tokens)


def build_reference(context: BuildContext) -> ReferenceModel | None:
    """The frozen reference, or None when the KL coefficient is 0 (no KL term)."""
    if context.config.algorithm.kl_coef == 0:
        return None
    return loader(context.config).reference(context)


def build_teachers(context: BuildContext) -> list[ReferenceModel]:
    """The frozen teachers of ``teacher`` (on-policy distillation): a directory loaded like
    the reference, or a served model (a URL, :mod:`.remote_teachers`); each must use the
    student's tokenizer (ValueError naming both)."""
    models: list[ReferenceModel] = []
    load = loader(context.config)
    for teacher in context.config.teacher.teachers():
        if teacher.url is not None:
            models.append(
                build_remote_teacher(
                    teacher,
                    context.tokenizer,
                    str(context.model_path),
                    lambda where: load.tokenizer(context.config, where),
                    seed=context.config.train.seed,
                )
            )
            continue
        path = str(teacher.path)
        teacher_context = replace(context, model_path=Path(path))
        teacher_tokenizer = load.tokenizer(context.config, Path(path))
        check_same_tokenizer(context.tokenizer, teacher_tokenizer, str(context.model_path), path)
        models.append(load.reference(teacher_context))
    return models


def build_critic(context: BuildContext) -> Critic | None:
    """The value model, or None when the advantage estimator needs no values."""
    if not ADVANTAGE_ESTIMATORS.get(context.config.algorithm.advantage_estimator).needs_values:
        return None
    return loader(context.config).critic(context)


def build_engine(context: BuildContext) -> RolloutEngine:
    return build(ENGINES, context.config.rollout.engine, context)  # type: ignore[no-any-return]


def build_strategy(
    context: BuildContext,
    module: torch.nn.Module | None,
    role: Literal["policy", "critic"] = "policy",
) -> Strategy | None:
    """The training backend for ``module`` (prepared), or None when there is no module;
    ``role``: the model it trains (the critic's optimizer takes ``optim.critic_lr``)."""
    if module is None:
        return None
    strategy: Strategy = build(
        STRATEGIES, context.config.backend.strategy, replace(context, role=role)
    )
    strategy.prepare(module)
    return strategy
