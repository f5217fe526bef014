"""``HfPolicy``: the ``Policy`` port on a Hugging Face causal LM, optionally with LoRA.

Shape letters as in :mod:`lightrft.domain.types`: B samples, T tokens, R response tokens.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from peft import PeftModel
from torch import Tensor, nn
from transformers import PreTrainedModel
from transformers.tokenization_utils_base import PreTrainedTokenizerBase
from typing_extensions import Unpack

from lightrft.adapters.hf.lora import LoraParams, apply_lora, lora_layers, merged_weights
from lightrft.adapters.hf.response_forward import ForwardOptions, ResponseForward
from lightrft.domain.ports import NamedTensors, PolicyOutput
from lightrft.domain.types import SequenceBatch


class HfPolicy:
    """A trainable causal LM whose response-token log-probs the services optimize.

    Args:
        model: a ``transformers`` causal LM (e.g. from ``loading.load_causal_lm``).
        lora: wrap ``model`` with fresh PEFT LoRA adapters; then only the adapter weights
            train, and :meth:`weights_for_sync` / :meth:`export_hf` merge them into the base
            (:meth:`export_adapter` writes the adapter alone).
        packing: run each forward as one packed row of all samples (no padding compute);
            with prefix sharing, pack several prompt groups per row of at most
            ``max_shared_row_tokens`` tokens (:mod:`~lightrft.adapters.hf.packed_prefix`);
            results equal the padded path.
        prefix_sharing: run each distinct prompt of a batch once, its responses packed after
            it under a 4-D mask (:mod:`~lightrft.adapters.hf.prefix_sharing`); results equal
            the padded path. "auto": when the attention is sdpa or eager, some prompt
            repeats and no packed row exceeds ``max_shared_row_tokens`` (else the padded or
            packed path); "on": always (refuses flash_attention_2); "off": never.
        max_shared_row_tokens: the longest packed row "auto" shares.
        chunk_size: rows per chunk of the log-softmax (bounds the float32 logits memory).
        fused_head: run the LM head fused with the log-softmax, chunk by chunk, so the
            (K, V) logits and their gradient never exist whole
            (:mod:`~lightrft.adapters.hf.fused_head`; Llama, Mistral, Qwen2, Qwen3, Gemma text
            models with an unsharded head, else the unfused path): "auto" (default: when
            the unfused logits would take >= 256 MiB), "on", "off".
        tokenizer: saved next to the weights by :meth:`export_hf` when given.
        multimodal: the model family's input builder (a vision- or audio-language model,
            :mod:`~lightrft.adapters.hf.multimodal_inputs`); then every batch, with or
            without media, runs with the family's inputs (M-RoPE ...): padded, or one packed
            row with ``packing`` (:mod:`~lightrft.adapters.hf.packed_media`; Qwen2-VL,
            Qwen2.5-VL and Qwen2-Audio, padded for Qwen2.5-Omni); ``prefix_sharing`` is
            not used.
        processors: media processors (image processor, feature extractor) saved with the
            tokenizer by :meth:`export_hf`.

    The module's train/eval mode is the caller's choice (LoRA dropout acts in train mode).
    """

    def __init__(
        self,
        model: PreTrainedModel,
        *,
        lora: LoraParams | None = None,
        tokenizer: PreTrainedTokenizerBase | None = None,
        processors: Sequence[Any] = (),
        **forward: Unpack[ForwardOptions],
    ) -> None:
        self._model: nn.Module = apply_lora(model, lora) if lora is not None else model
        self._forward = ResponseForward(self._model, **forward)
        self._tokenizer = tokenizer
        self._processors = tuple(processors)

    @property
    def module(self) -> nn.Module:
        """The ``nn.Module`` to train (the PEFT wrapper under LoRA)."""
        return self._model

    @property
    def uses_lora(self) -> bool:
        """Whether the module carries LoRA adapters."""
        return isinstance(self._model, PeftModel)

    def forward(
        self, batch: SequenceBatch, *, temperature: float = 1.0, with_entropy: bool = False
    ) -> PolicyOutput:
        """Log-probs (B, R) of the response tokens (0 on padding), entropy (B, R) if asked."""
        return self._forward.logprobs(
            self._model, batch, temperature=temperature, with_entropy=with_entropy
        )

    def weights_for_sync(self, full_state: NamedTensors) -> Iterator[tuple[str, Tensor]]:
        """Base-model names and tensors with LoRA merged (W + scaling * B @ A), streamed.

        ``full_state`` is the module's gathered state (``Strategy.full_state()``); without
        LoRA it passes through unchanged.
        """
        if not isinstance(self._model, PeftModel):
            yield from full_state
            return
        adapter = self._model.active_adapter
        yield from merged_weights(full_state, lora_layers(self._model), adapter)

    def export_hf(
        self, directory: str | Path, *, state: Mapping[str, Tensor] | None = None
    ) -> Path:
        """Writes a plain ``transformers`` directory (LoRA merged) that ``from_pretrained``
        loads without PEFT; also the tokenizer when the policy has one.

        ``state`` is the module's full state dict when a sharded strategy gathered it (the
        local module then holds shards only); by default the local state dict is used.
        """
        directory = Path(directory)
        if state is None:
            state = {name: tensor.detach() for name, tensor in self._model.state_dict().items()}
        merged = dict(self.weights_for_sync(state.items()))
        base: Any = self._model
        if isinstance(base, PeftModel):
            base = base.get_base_model()
        base.save_pretrained(directory, state_dict=merged)
        if self._tokenizer is not None:
            self._tokenizer.save_pretrained(directory)
        for processor in self._processors:  # image processor / feature extractor
            processor.save_pretrained(directory)
        return directory

    def export_adapter(
        self, directory: str | Path, *, state: Mapping[str, Tensor] | None = None
    ) -> Path | None:
        """Writes the LoRA adapter alone, as PEFT saves it (``adapter_config.json`` and
        ``adapter_model.safetensors``), for ``PeftModel.from_pretrained(base, directory)`` on
        the base model; returns None (writes nothing) without LoRA.

        ``state`` as for :meth:`export_hf` (the PEFT module's gathered state dict).
        """
        if not isinstance(self._model, PeftModel):
            return None
        directory = Path(directory)
        full = None if state is None else dict(state)
        self._model.save_pretrained(
            str(directory), state_dict=full, safe_serialization=True, save_embedding_layers=False
        )
        return directory
