"""Built-in model loaders, one per ``model.modality`` (text: Hugging Face causal LMs)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import structlog
import torch

from lightrft.adapters.hf import (
    HfPolicy,
    HfReferenceModel,
    LoraParams,
    ModelLoadParams,
    load_causal_lm,
    load_tokenizer,
)
from lightrft.adapters.hf.attention_choice import choose_attention
from lightrft.adapters.hf.critic import HfCritic
from lightrft.entrypoints.config import RunConfig
from lightrft.entrypoints.config.strategy_configs import StrategySection
from lightrft.entrypoints.wiring.registries import BuildContext, ModelLoader

DTYPES = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}


def load_params(config: RunConfig, device: torch.device, *, train: bool) -> ModelLoadParams:
    """How to load the configured model on ``device`` for training (``train``: in the
    strategy's weights dtype, see ``StrategySection.weights_dtype``) or inference."""
    m = config.model
    strategy = cast(StrategySection, config.backend.strategy)
    dtype = strategy.weights_dtype(m.dtype) if train else m.dtype
    attention = choose_attention(
        m.attn_implementation, device, m.dtype, dense_mask=m.prefix_sharing == "on"
    )
    if m.attn_implementation == "auto":
        structlog.get_logger(__name__).info(
            "model.attention", chosen=attention.name, reason=attention.reason
        )
    return ModelLoadParams(
        dtype=DTYPES[dtype],  # type: ignore[arg-type]
        attn_implementation=attention.name,
        gradient_checkpointing=m.gradient_checkpointing and train,
        trust_remote_code=m.trust_remote_code,
    )


def lora_params(config: RunConfig) -> LoraParams | None:
    """The LoRA adapter the config asks for (None: train all weights), its fresh weights
    seeded from ``train.seed`` (the same on every rank and in every run)."""
    lora = config.model.lora
    if lora.rank == 0:
        return None
    targets = lora.target_modules
    return LoraParams(
        rank=lora.rank,
        alpha=lora.alpha,
        dropout=lora.dropout,
        target_modules=targets if isinstance(targets, str) else tuple(targets),
        init_seed=config.train.seed,
    )


def _causal_lm(context: BuildContext, *, train: bool) -> Any:
    return load_causal_lm(
        context.model_path,
        context.device,
        load_params(context.config, context.device, train=train),
    )


def _tokenizer(config: RunConfig, path: Path) -> Any:
    return load_tokenizer(path, trust_remote_code=config.model.trust_remote_code)


def _policy(context: BuildContext) -> HfPolicy:
    m = context.config.model
    return HfPolicy(
        _causal_lm(context, train=True),
        lora=lora_params(context.config),
        packing=m.packing,
        prefix_sharing=m.prefix_sharing,
        chunk_size=m.logprob_chunk_size,
        fused_head=m.fused_lm_head,
        tokenizer=context.tokenizer,
    )


def _reference(context: BuildContext) -> HfReferenceModel:
    m = context.config.model
    return HfReferenceModel(
        _causal_lm(context, train=False),
        context.device,
        packing=m.packing,
        prefix_sharing=m.prefix_sharing,
        chunk_size=m.logprob_chunk_size,
        fused_head=m.fused_lm_head,
    )


def _critic(context: BuildContext) -> HfCritic:
    return HfCritic(_causal_lm(context, train=True), init_seed=context.config.train.seed)


def _generation_model(context: BuildContext) -> torch.nn.Module:
    return _causal_lm(context, train=False)  # type: ignore[no-any-return]


TEXT_LOADER = ModelLoader(
    tokenizer=_tokenizer,
    policy=_policy,
    reference=_reference,
    critic=_critic,
    generation_model=_generation_model,
)
"""``model.modality: text``: causal LMs of ``transformers``."""
