"""Built-in rollout engine builders (``rollout.engine``)."""

from __future__ import annotations

from lightrft.adapters.hf import HfRolloutEngine
from lightrft.adapters.hf.quantized_rollout import QuantizedTargets, quantize_linears
from lightrft.domain.ports import RolloutEngine
from lightrft.entrypoints.config import RunConfig
from lightrft.entrypoints.config.engine_configs import (
    HfEngineConfig,
    SglangEngineConfig,
    VllmEngineConfig,
)
from lightrft.entrypoints.wiring.registries import MODEL_LOADERS, BuildContext


def build_hf_engine(section: HfEngineConfig, context: BuildContext) -> HfRolloutEngine:
    """LightRFT's KV-cached sampler on the policy's own module when the config shares
    weights, else on a model of its own."""
    config = context.config
    shared = section.shares_weights(config)
    loader = MODEL_LOADERS.get(config.model.modality)
    model = context.policy().module if shared else loader.generation_model(context)
    inputs = None if loader.engine_inputs is None else loader.engine_inputs(model)
    quantized: QuantizedTargets | None = None
    if section.quantization == "int8":  # own model (shared is off): quantized in place
        quantized = quantize_linears(model)  # type: ignore[arg-type]
    return HfRolloutEngine(
        model,  # type: ignore[arg-type]
        context.tokenizer,
        context.device,
        sleep_mode="offload",
        max_batch_size=section.max_batch_size,
        shares_policy_weights=shared,
        compile_decode=section.compile_decode,
        multimodal=inputs,
        quantized=quantized,
        packed_linears=section.packed_linears,
        fused_decode=section.fused_decode,
        episode_cache_size=section.episode_cache,
    )


_ENGINE_DTYPES = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}
_MODEL_DTYPE = "auto"  # an engine dtype meaning: the model's training dtype (model.dtype)


def _engine_dtype(section_dtype: str, model_dtype: str) -> str:
    """An own-weights engine's dtype: the section's, or the model's for ``auto``."""
    return _ENGINE_DTYPES[model_dtype] if section_dtype == _MODEL_DTYPE else section_dtype


_IMAGE_MODALITIES = frozenset({"vision-language", "omni"})


def _image_bounds(config: RunConfig) -> dict[str, int] | None:
    """vLLM's image processor bounds for a model reading images: the run's
    ``model.min_pixels`` / ``max_pixels``, which our prompt encoder resized with."""
    model = config.model
    if model.modality not in _IMAGE_MODALITIES:
        return None
    return {"min_pixels": model.min_pixels, "max_pixels": model.max_pixels}


def build_vllm_engine(section: VllmEngineConfig, context: BuildContext) -> RolloutEngine:
    """An in-process vLLM engine on the run's model directory (its own copy of the weights,
    synced from the policy each step)."""
    from lightrft.adapters.vllm import VllmEngineParams, VllmRolloutEngine

    config = context.config
    device_type = context.device.type
    if config.rollout.fp8 and device_type != "cuda":
        raise ValueError(
            f"rollout.fp8=true needs vLLM on a CUDA device; this run's device is {device_type}"
        )
    dtype = _engine_dtype(section.dtype, config.model.dtype)
    params = VllmEngineParams(
        model_path=str(context.model_path),
        dtype=dtype,  # type: ignore[arg-type]
        memory_fraction=section.memory_fraction,
        kv_cache_gib=section.kv_cache_gib,
        max_model_len=section.max_model_len,
        enforce_eager=device_type != "cuda"
        if section.enforce_eager is None
        else section.enforce_eager,
        sleep_level=section.sleep_level,
        sync_bucket_mib=section.sync_bucket_mib,
        tensor_parallel_size=section.tensor_parallel_size,
        seed=config.train.seed,
        max_num_seqs=section.max_num_seqs,
        quantization="fp8" if config.rollout.fp8 else None,
        trust_remote_code=config.model.trust_remote_code,
        media_per_prompt=None
        if section.media_per_prompt is None
        else {str(kind): count for kind, count in section.media_per_prompt.items()},
        mm_processor_kwargs=_image_bounds(config),
    )
    return VllmRolloutEngine(params, device_type)


def build_sglang_engine(section: SglangEngineConfig, context: BuildContext) -> RolloutEngine:
    """An in-process SGLang engine on the run's model directory (CUDA only, unverified)."""
    from lightrft.adapters.sglang import SglangEngineParams, SglangRolloutEngine, start_sglang

    config = context.config
    dtype = _engine_dtype(section.dtype, config.model.dtype)
    params = SglangEngineParams(
        model_path=str(context.model_path),
        dtype=dtype,
        memory_fraction=section.memory_fraction,
        tensor_parallel_size=section.tensor_parallel_size,
        seed=config.train.seed,
        context_length=section.context_length,
        sync_bucket_mib=section.sync_bucket_mib,
    )
    return SglangRolloutEngine(params, engine=start_sglang(params, context.device.type))
