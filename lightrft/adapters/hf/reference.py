"""``HfReferenceModel``: the frozen ``ReferenceModel`` port on a Hugging Face causal LM.

Shape letters as in :mod:`lightrft.domain.types`: B samples, R response tokens.
"""

from __future__ import annotations

import torch
from torch import nn
from transformers import PreTrainedModel

from lightrft.adapters.hf.multimodal_inputs import MultimodalInputs, multimodal_logprobs
from lightrft.adapters.hf.prefix_sharing import (
    DEFAULT_MAX_ROW_TOKENS,
    PrefixSharing,
    PrefixSharingMode,
)
from lightrft.adapters.hf.weights import frozen_on
from lightrft.domain.ports import PolicyOutput
from lightrft.domain.types import SequenceBatch

HOST = torch.device("cpu")


class HfReferenceModel:
    """A frozen copy of the initial policy for the KL term.

    The weights never require grad, the module stays in eval mode and :meth:`forward` runs
    under ``torch.no_grad``. :meth:`offload` moves the weights to host memory between uses
    and :meth:`onload` brings them back to ``device``; ``offloads`` / ``onloads`` count the
    moves. Calling :meth:`forward` while offloaded raises ``RuntimeError``.
    ``packing``, ``prefix_sharing`` and ``max_shared_row_tokens`` choose the forward path as
    in ``HfPolicy`` (all paths give the same log-probs); ``multimodal`` as in ``HfPolicy``.
    """

    def __init__(
        self,
        model: PreTrainedModel,
        device: torch.device,
        *,
        packing: bool = False,
        prefix_sharing: PrefixSharingMode = "auto",
        max_shared_row_tokens: int = DEFAULT_MAX_ROW_TOKENS,
        chunk_size: int = 1024,
        multimodal: MultimodalInputs | None = None,
    ) -> None:
        if multimodal is not None:
            prefix_sharing = "off"
        sharing = PrefixSharing(prefix_sharing, max_shared_row_tokens)
        sharing.check_model(model)
        frozen_on(model, device)
        self._model: nn.Module = model
        self._device = device
        self._packing = packing
        self._prefix_sharing = sharing
        self._chunk_size = chunk_size
        self._multimodal = multimodal
        self._offloaded = False
        self.offloads = 0
        self.onloads = 0

    @property
    def module(self) -> nn.Module:
        """The frozen model."""
        return self._model

    @property
    def is_offloaded(self) -> bool:
        """Whether the weights sit in host memory."""
        return self._offloaded

    def forward(
        self, batch: SequenceBatch, *, temperature: float = 1.0, with_entropy: bool = False
    ) -> PolicyOutput:
        """Log-probs (B, R) of the response tokens (0 on padding), entropy (B, R) if asked."""
        if self._offloaded:
            raise RuntimeError("the reference model is offloaded; call onload() first")
        with torch.no_grad():
            if self._multimodal is not None:
                return multimodal_logprobs(
                    self._model,
                    batch,
                    self._multimodal,
                    temperature=temperature,
                    with_entropy=with_entropy,
                    chunk_size=self._chunk_size,
                )
            return self._prefix_sharing.logprobs(
                self._model,
                batch,
                temperature=temperature,
                with_entropy=with_entropy,
                packing=self._packing,
                chunk_size=self._chunk_size,
            )

    def offload(self) -> None:
        """Moves the weights to host memory."""
        self._model.to(HOST)
        self._offloaded = True
        self.offloads += 1

    def onload(self) -> None:
        """Moves the weights back to the device."""
        self._model.to(self._device)
        self._offloaded = False
        self.onloads += 1
