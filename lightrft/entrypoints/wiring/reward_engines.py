"""What runs a model-backed reward source: ``reward.sources[*].engine`` (hf, vllm, sglang).

Two registries (:mod:`~lightrft.entrypoints.wiring.registries`): ``JUDGE_ENGINES`` build the
``RolloutEngine`` a generative judge generates with; ``SCALAR_RM_ENGINES`` build a whole
scalar reward source (HF forward, or vLLM's pooling runner). Their keys are the ``engines``
of the config models (a test asserts it). Like the original LightRFT's ``--rm_use_engine``,
but one choice per source.

The vLLM scalar path scores what the HF path scores only for decoder classifiers vLLM builds
from a supported causal LM (:func:`lightrft.adapters.vllm.unsupported_reason`); any other
directory is scored on the HF path, with a ``reward.engine_fallback`` warning naming why.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import structlog

from lightrft.domain.ports import RewardSource, RolloutEngine
from lightrft.entrypoints.config.reward_model_configs import (
    EngineRmSection,
    GenerativeRmConfig,
    ScalarRmConfig,
)
from lightrft.entrypoints.wiring.model_loaders import DTYPES
from lightrft.entrypoints.wiring.registries import (
    MODEL_LOADERS,
    BuildContext,
)

log = structlog.get_logger(__name__)


def vllm_params(section: EngineRmSection, context: BuildContext, path: Path) -> Any:
    """``VllmEngineParams`` of a reward source's own in-process vLLM engine on ``path``."""
    from lightrft.adapters.vllm import VllmEngineParams

    return VllmEngineParams(
        model_path=str(path),
        dtype=DTYPES[section.dtype],  # type: ignore[attr-defined,arg-type]
        memory_fraction=section.engine_memory_fraction,
        kv_cache_gib=section.engine_kv_cache_gib,
        max_model_len=section.engine_max_model_len,
        enforce_eager=context.device.type != "cuda",
        seed=context.config.train.seed,
        sleep_level=1,  # a reward model's weights are never synced: keep them across sleep
        trust_remote_code=getattr(section, "trust_remote_code", False),
    )


def hf_judge(section: GenerativeRmConfig, context: BuildContext, path: Path) -> RolloutEngine:
    """LightRFT's KV-cached sampler on the judge loaded with transformers (a vision- or
    audio-language judge with its family's media inputs)."""
    from lightrft.adapters.hf import (
        HfRolloutEngine,
        ModelLoadParams,
        load_causal_lm,
        load_tokenizer,
    )
    from lightrft.adapters.hf.multimodal_inputs import multimodal_inputs_for
    from lightrft.adapters.hf.multimodal_loading import load_multimodal_model

    params = ModelLoadParams(dtype=DTYPES[section.dtype])  # type: ignore[arg-type]
    if MODEL_LOADERS.get(section.modality).prompt_encoder is None:  # text: the plain loader
        model = load_causal_lm(path, context.device, params)
        return HfRolloutEngine(model, load_tokenizer(path), context.device)
    model = load_multimodal_model(path, section.modality, context.device, params)
    media = multimodal_inputs_for(model)
    return HfRolloutEngine(model, load_tokenizer(path), context.device, multimodal=media)


def vllm_judge(section: GenerativeRmConfig, context: BuildContext, path: Path) -> RolloutEngine:
    """An in-process vLLM engine on the judge's directory (greedy, like the HF judge)."""
    from lightrft.adapters.vllm import VllmRolloutEngine

    return VllmRolloutEngine(vllm_params(section, context, path), context.device.type)


def sglang_judge(section: GenerativeRmConfig, context: BuildContext, path: Path) -> RolloutEngine:
    """An in-process SGLang engine on the judge's directory (CUDA only; GPU-only and
    unverified, like the SGLang rollout engine)."""
    from lightrft.adapters.sglang import SglangEngineParams, SglangRolloutEngine, start_sglang

    if context.device.type != "cuda":
        raise ValueError(
            f"reward source {section.label!r}: engine sglang needs a CUDA device (SGLang has "
            f"no CPU build here); this run is on {context.device.type}"
        )
    params = SglangEngineParams(
        model_path=str(path),
        dtype=DTYPES[section.dtype],
        memory_fraction=section.engine_memory_fraction,
        seed=context.config.train.seed,
        context_length=section.engine_max_model_len,
        weights_cpu_backup=True,  # never synced: sleep must keep the weights
    )
    return SglangRolloutEngine(params, engine=start_sglang(params, context.device.type))


def hf_scalar_rm(section: ScalarRmConfig, context: BuildContext) -> RewardSource:
    """The reward model's forward in transformers, on the run's device, of the modality its
    card names (text, vision, audio)."""
    from lightrft.entrypoints.wiring.scalar_reward_models import load_scalar_rm

    return load_scalar_rm(
        section.path,
        context.device,
        context.config,
        dtype=DTYPES[section.dtype],
        trust_remote_code=section.trust_remote_code,
        init_seed=context.config.train.seed,  # a causal LM path gets a fresh, seeded head
        name=section.label,
        normalize=section.normalize,
        micro_batch_size=section.micro_batch_size,
    )


def vllm_scalar_rm(section: ScalarRmConfig, context: BuildContext) -> RewardSource:
    """vLLM's pooling runner on the reward model's directory; the HF path (with a warning)
    when vLLM would not give the same scores."""
    from lightrft.adapters.reward_models.engine_scalar import EngineScalarRewardModel
    from lightrft.adapters.vllm import VllmRewardScorer, unsupported_reason

    reason = unsupported_reason(section.path, trust_remote_code=section.trust_remote_code)
    if reason is not None:
        log.warning(
            "reward.engine_fallback",
            source=section.label,
            engine="vllm",
            used="hf",
            reason=reason,
        )
        return hf_scalar_rm(section, context)
    scorer = VllmRewardScorer(
        vllm_params(section, context, Path(section.path)), context.device.type
    )
    return EngineScalarRewardModel.from_pretrained(
        section.path,
        scorer,
        trust_remote_code=section.trust_remote_code,
        name=section.label,
        normalize=section.normalize,
    )
