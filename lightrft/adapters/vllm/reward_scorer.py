"""``VllmRewardScorer``: raw scalar reward-model scores from vLLM's pooling runner.

Shape letters: B sequences. A scalar reward model (an HF ``*ForSequenceClassification``
directory with one label) is scored by LightRFT's HF path as its linear head applied to the
hidden state of each sequence's last token. vLLM's pooling runner computes the same quantity
for a decoder classifier it builds from a supported ``*ForCausalLM`` (its ``as_seq_cls_model``
adapter, head ``score``), with last-token pooling and no activation
(:func:`~lightrft.adapters.vllm.params.llm_kwargs`, ``runner="pooling"``). The sequences come
in as token ids, tokenized by the caller exactly as for the HF path.

:func:`unsupported_reason` says, before vLLM starts, why a directory cannot be scored that way
(the caller then uses the HF path). Sleep on CUDA (GPU-only, unverified): ``sleep`` is
``LLM.sleep(level=1)`` (weights to host memory), ``wake_up`` restores everything; on CPU
vLLM has no sleep mode and both only gate :meth:`VllmRewardScorer.scores`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import structlog
import torch
from torch import Tensor

from lightrft.adapters.vllm.checks import require_vllm
from lightrft.adapters.vllm.engine import start_llm
from lightrft.adapters.vllm.lifetime import shut_down
from lightrft.adapters.vllm.params import VllmEngineParams

log = structlog.get_logger(__name__)

CLASSIFIER_SUFFIX = "ForSequenceClassification"


def unsupported_reason(path: str | Path, *, trust_remote_code: bool = False) -> str | None:
    """Why vLLM's pooling runner would not give the HF path's scores for the reward model in
    ``path`` (``None``: it would)."""
    from transformers import AutoConfig

    config = AutoConfig.from_pretrained(str(path), trust_remote_code=trust_remote_code)
    architectures = list(getattr(config, "architectures", None) or [])
    if len(architectures) != 1:
        return f"config.json names architectures {architectures}, expected exactly one"
    arch = architectures[0]
    if not arch.endswith(CLASSIFIER_SUFFIX):
        return (
            f"{arch} is not a sequence classifier: the HF path gives it a freshly seeded score "
            "head, which vLLM does not reproduce"
        )
    if getattr(config, "num_labels", 1) != 1:
        return f"{arch} has num_labels={config.num_labels}; a scalar reward model has 1"
    causal = arch.removesuffix(CLASSIFIER_SUFFIX) + "ForCausalLM"
    vllm = require_vllm()
    if causal not in vllm.ModelRegistry.get_supported_archs():
        return (
            f"vLLM {vllm.__version__} has no {causal}, so it cannot build {arch} with the "
            "last-token score head LightRFT's HF path uses"
        )
    return None


class VllmRewardScorer:
    """Raw scores (B,) of token sequences from an in-process vLLM pooling engine.

    Args:
        params: engine settings (``runner`` is set to ``"pooling"``).
        device_type: ``"cuda"`` or ``"cpu"``.
    """

    def __init__(self, params: VllmEngineParams, device_type: str = "cpu") -> None:
        self._device_type = device_type
        self._llm: Any = start_llm(replace(params, runner="pooling"), device_type)
        if "classify" not in self._llm.supported_tasks:
            tasks = self._llm.supported_tasks
            shut_down(self._llm)
            self._llm = None
            raise ValueError(
                f"vLLM loads {params.model_path} with pooling tasks {list(tasks)}, "
                "not 'classify'; use engine hf for this reward model"
            )
        self._awake = True

    @property
    def llm(self) -> Any:
        """The underlying ``vllm.LLM`` (``None`` once closed)."""
        return self._llm

    def scores(self, rows: Sequence[Sequence[int]]) -> Tensor:
        """One raw score per token sequence. Shape: (B,) float32, on the CPU."""
        if self._llm is None:
            raise RuntimeError("the vLLM reward scorer is closed")
        if not self._awake:
            raise RuntimeError("the vLLM reward scorer is asleep; call wake_up() first")
        if not rows:
            return torch.zeros(0)
        vllm = require_vllm()
        from vllm.inputs import TokensPrompt

        outputs = self._llm.encode(
            [TokensPrompt(prompt_token_ids=list(row)) for row in rows],
            pooling_task="classify",
            pooling_params=vllm.PoolingParams(use_activation=False),
            use_tqdm=False,
        )
        return torch.stack([o.outputs.data.reshape(()).float().cpu() for o in outputs])

    def sleep(self) -> None:
        """Offloads the weights on CUDA; gates :meth:`scores` everywhere."""
        if self._awake and self._llm is not None and self._device_type == "cuda":
            self._llm.sleep(level=1)
        self._awake = False

    def wake_up(self) -> None:
        """Restores what :meth:`sleep` released."""
        if not self._awake and self._llm is not None and self._device_type == "cuda":
            self._llm.wake_up()
        self._awake = True

    def close(self) -> None:
        """Shuts the engine down (:func:`~lightrft.adapters.vllm.lifetime.shut_down`);
        idempotent."""
        llm, self._llm = self._llm, None
        if llm is not None:
            shut_down(llm)
            log.info("reward_model.engine_closed", engine="vllm")
