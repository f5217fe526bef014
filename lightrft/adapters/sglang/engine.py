"""``SglangRolloutEngine``: the ``RolloutEngine`` port on an in-process ``sglang.Engine``.

GPU-only and unverified: SGLang has no CPU build for this project's machines, so only the
request/response translation, bucketing and the call sequence (against a recording stand-in)
are tested. Not a supported engine until it has run on a GPU.

Weight sync: names mapped, buckets that never split a decoder layer
(:mod:`lightrft.adapters.engine_parts.weight_buckets`), each through
``update_weights_from_tensor(named_tensors=..., flush_cache=False)``, then one
``flush_cache()``. Sleep: ``release_memory_occupation`` (weights, KV cache, CUDA graphs);
wake-up is staged like the vLLM engine's: ``resume_memory_occupation(["weights"])`` at
``wake_up``, the KV cache and CUDA graphs at the next ``generate``.
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import structlog

from lightrft.adapters.engine_parts.rollout_engine_base import GuardedGenerate
from lightrft.adapters.engine_parts.weight_buckets import bucket_weights, rename_weights
from lightrft.adapters.sglang.translate import generate_request, to_completion
from lightrft.domain.ports import NamedTensors
from lightrft.domain.types import Completion, PromptRecord, SamplingParams

log = structlog.get_logger(__name__)

_SLEEP_TAGS = ["weights", "kv_cache", "cuda_graph"]
_LATE_TAGS = ["kv_cache", "cuda_graph"]


@dataclass(frozen=True)
class SglangEngineParams:
    """``sglang.Engine`` settings: model directory, dtype, static memory fraction, tensor
    parallel size, seed, context length and the weight-sync bucket bound.
    ``weights_cpu_backup`` keeps a host copy of the weights across ``sleep`` (an engine whose
    weights are never synced, e.g. a judge, needs it)."""

    model_path: str
    dtype: str = "auto"
    memory_fraction: float = 0.5
    tensor_parallel_size: int = 1
    seed: int = 0
    context_length: int | None = None
    sync_bucket_mib: float = 512.0
    strip_prefixes: tuple[str, ...] = ("module.", "_orig_mod.")
    weights_cpu_backup: bool = False

    def engine_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of ``sglang.Engine``."""
        kwargs: dict[str, Any] = {
            "model_path": self.model_path,
            "dtype": self.dtype,
            "mem_fraction_static": self.memory_fraction,
            "tp_size": self.tensor_parallel_size,
            "random_seed": self.seed,
            "enable_memory_saver": True,  # release/resume memory occupation
        }
        if self.context_length is not None:
            kwargs["context_length"] = self.context_length
        if self.weights_cpu_backup:
            kwargs["enable_weights_cpu_backup"] = True
        return kwargs


def start_sglang(params: SglangEngineParams, device_type: str) -> Any:
    """An in-process ``sglang.Engine`` (CUDA only)."""
    if device_type != "cuda":
        raise ValueError(f"rollout.engine=sglang needs a CUDA device; this run is on {device_type}")
    try:
        sglang = importlib.import_module("sglang")
    except ImportError as error:
        raise ImportError(
            f"rollout.engine=sglang needs SGLang ({error}); pip install 'lightrft[sglang]'"
        ) from error
    return sglang.Engine(**params.engine_kwargs())


class SglangRolloutEngine(GuardedGenerate):
    """Generation, weight sync and sleep/wake on SGLang (see the module docstring)."""

    def __init__(self, params: SglangEngineParams, *, engine: Any = None) -> None:
        self._params = params
        self._engine = start_sglang(params, "cuda") if engine is None else engine
        self._awake = True
        self._late_asleep = False
        self.weight_loads = 0

    def _generate(
        self, prompts: Sequence[PromptRecord], sampling: SamplingParams
    ) -> list[Completion]:
        if self._late_asleep:
            self._engine.resume_memory_occupation(tags=_LATE_TAGS)
            self._late_asleep = False
        owners, request = generate_request(prompts, sampling)
        results = self._engine.generate(**request)
        return [to_completion(i, r) for i, r in zip(owners, results, strict=True)]

    def load_weights(self, weights: NamedTensors) -> None:
        """Updates the engine's weights in layer-preserving buckets, then flushes the cache."""
        self._require_awake("load_weights")
        start = time.perf_counter()
        named = rename_weights(
            ((n, t.detach()) for n, t in weights), strip_prefixes=self._params.strip_prefixes
        )
        bound = max(1, int(self._params.sync_bucket_mib * 2**20))
        buckets = 0
        for bucket in bucket_weights(named, bound):
            self._engine.update_weights_from_tensor(named_tensors=bucket, flush_cache=False)
            buckets += 1
        self._engine.flush_cache()
        self.weight_loads += 1
        log.info(
            "rollout.weight_sync",
            engine="sglang",
            buckets=buckets,
            seconds=round(time.perf_counter() - start, 4),
        )

    def sleep(self) -> None:
        """Releases weights, KV cache and CUDA graphs."""
        if not self._awake:
            return
        self._engine.release_memory_occupation(tags=_SLEEP_TAGS)
        self._awake = False
        self._late_asleep = True

    def wake_up(self) -> None:
        """Resumes the weights; the KV cache and CUDA graphs return at the next generate."""
        if self._awake:
            return
        self._engine.resume_memory_occupation(tags=["weights"])
        self._awake = True
