"""Config models of the built-in rollout engines (``rollout.engine``)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from lightrft.entrypoints.config.components import (
    ENGINE_CONFIGS,
    ComponentSection,
    RunView,
    register_config,
)
from lightrft.entrypoints.config.switches import AutoOnOff


@register_config(ENGINE_CONFIGS, "hf")
class HfEngineConfig(ComponentSection):
    """Hugging Face model with LightRFT's KV-cached sampler (the embedded default)."""

    type: Literal["hf"] = "hf"
    max_batch_size: int | None = Field(None, gt=0, description="Rows generated at once.")
    share_policy_weights: AutoOnOff = Field(
        "auto",
        description="Run the policy's own module (no weight copy, no sync copy); auto: when "
        "the training strategy does not shard parameters and model.lora.rank is 0.",
    )
    compile_decode: bool = Field(
        False,
        description="torch.compile the one-token decode step (minutes of compilation on a "
        "small CPU; faster steps after).",
    )
    packed_linears: bool = Field(
        False,
        description="On CPU, decode with oneDNN-packed copies of the float32 linear weights "
        "(faster decode steps; same samples up to float rounding, so near-ties may sample "
        "differently; the weights' size in host memory during rollout).",
    )
    fused_decode: AutoOnOff = Field(
        "auto",
        description="On CPU, run each decode step of a float32 Llama/Qwen2/Mistral text model "
        "as LightRFT's own fused ops (packed q|k|v and gate|up matmuls, no transformers "
        "module code; supersedes packed_linears; same samples up to float rounding, so "
        "near-ties may sample differently; the packed weights' size in host memory during "
        "rollout). auto: wherever the model and the engine's settings allow it (the demo: "
        "about 10% less wall time, same figures; docs/performance.md), else the usual "
        "steps; on: the same, but logs a warning where unsupported; off: never.",
    )
    episode_cache: int = Field(
        0,
        ge=0,
        description="Multi-turn episodes (rollout.environment): keep the KV cache of up to this "
        "many episodes between their turns, so a turn prefills only its new tokens (released "
        "when the episodes end and at every weight sync; least recently used evicted beyond "
        "the cap); text models only; 0: off (each turn prefills its whole context).",
    )
    quantization: Literal["none", "int8"] = Field(
        "none",
        description="Rollout weights: none (the policy's), or int8 (weight-only, one scale per "
        "output channel, re-quantized at each sync; the engine keeps its own copy, the "
        "rollout/* mismatch metrics and algorithm.tis_cap=2 turn on unless set; see "
        "docs/performance.md for when it pays).",
    )

    def can_share_weights(self, run: RunView) -> bool:
        """Whether the policy is one unsharded copy of plain weights (a LoRA policy syncs
        merged weights, a sharded one gathers them) and the engine samples from them as
        they are (no quantization)."""
        return (
            not run.backend.strategy.shards_parameters
            and run.model.lora.rank == 0
            and self.quantization == "none"
        )

    def shares_weights(self, run: RunView) -> bool:
        """Whether this engine runs the policy's own module in ``run``."""
        choice = self.share_policy_weights
        return choice == "on" or (choice == "auto" and self.can_share_weights(run))

    def check_in_run(self, run: RunView) -> None:
        if self.share_policy_weights == "on" and not self.can_share_weights(run):
            raise ValueError(
                "rollout.engine.share_policy_weights 'on' needs a backend.strategy that does "
                f"not shard parameters (got {run.backend.strategy.type!r}) and "
                f"model.lora.rank 0 (got {run.model.lora.rank}) and "
                f"rollout.engine.quantization none (got {self.quantization!r})"
            )


class OwnWeightsEngineConfig(ComponentSection):
    """Options of the engines that load their own copy of the model (vLLM, SGLang)."""

    dtype: Literal["auto", "float32", "bfloat16", "float16"] = Field(
        "auto", description="Engine dtype; auto: the model's training dtype (model.dtype)."
    )


@register_config(ENGINE_CONFIGS, "vllm")
class VllmEngineConfig(OwnWeightsEngineConfig):
    """vLLM in the training process (one engine per rank); see docs/engines.md."""

    type: Literal["vllm"] = "vllm"
    memory_fraction: float = Field(
        0.3,
        gt=0,
        le=1,
        description="vLLM gpu_memory_utilization: share of device memory (host RAM on CPU) "
        "for weights, activations and KV cache.",
    )
    kv_cache_gib: float | None = Field(
        None, gt=0, description="Explicit KV cache size in GiB (CPU default: 1 GiB)."
    )
    max_model_len: int | None = Field(
        None, gt=0, description="Longest prompt + response (default: the model config's)."
    )
    enforce_eager: bool | None = Field(
        None,
        description="No CUDA graphs / torch.compile (less memory and start time, slower "
        "steps); None: eager on CPU (compiling takes ~40 s on 2 cores), compiled on CUDA.",
    )
    sleep_level: Literal[1, 2] = Field(
        1,
        description="GPU sleep: 1 offloads weights and drops the KV cache; 2 drops both "
        "(reloaded by the next sync). CPU: no sleep mode (memory is not freed).",
    )
    sync_bucket_mib: float = Field(
        512.0, gt=0, description="Bound of one weight-sync call (a layer is never split)."
    )
    tensor_parallel_size: int = Field(
        1, ge=1, description="GPUs per engine (consecutive ranks; GPU-only, unverified)."
    )
    max_num_seqs: int | None = Field(None, gt=0, description="Sequences decoded together.")
    media_per_prompt: dict[Literal["image", "audio"], Annotated[int, Field(ge=0)]] | None = Field(
        None,
        description="vLLM limit_mm_per_prompt for vision/audio models: the most images / audio "
        "clips one prompt may hold, e.g. {audio: 2} (None: vLLM's default); a row with more "
        "is refused by name.",
    )

    def check_in_run(self, run: RunView) -> None:
        if run.rollout.first_token_temperature is not None:
            raise ValueError(
                "rollout.first_token_temperature (FIRE) is not supported by rollout.engine=vllm"
            )


@register_config(ENGINE_CONFIGS, "sglang")
class SglangEngineConfig(OwnWeightsEngineConfig):
    """SGLang in the training process (GPU-only, unverified: see docs/engines.md)."""

    type: Literal["sglang"] = "sglang"
    memory_fraction: float = Field(
        0.5, gt=0, le=1, description="SGLang mem_fraction_static (weights + KV cache)."
    )
    context_length: int | None = Field(None, gt=0, description="Longest prompt + response.")
    sync_bucket_mib: float = Field(512.0, gt=0, description="Bound of one weight-sync call.")
    tensor_parallel_size: int = Field(1, ge=1, description="GPUs per engine.")


@register_config(ENGINE_CONFIGS, "auto")
class AutoEngineConfig(ComponentSection):
    """Picks hf or vllm when the engine is built, by a rule logged as ``rollout.engine.auto``:
    vllm on a CUDA device when vLLM is installed and rollout.max_new_tokens reaches
    ``long_generation_tokens``; hf otherwise (each with its default options). Measured basis:
    docs/performance.md (HF engine vs vLLM)."""

    type: Literal["auto"] = "auto"
    long_generation_tokens: int = Field(
        256,
        gt=0,
        description="Generation budget (rollout.max_new_tokens) from which vllm is chosen on "
        "a GPU.",
    )
