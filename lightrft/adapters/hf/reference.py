"""``HfReferenceModel``: the frozen ``ReferenceModel`` port on a Hugging Face causal LM.

Shape letters as in :mod:`lightrft.domain.types`: B samples, R response tokens.
"""

from __future__ import annotations

import torch
from torch import nn
from transformers import PreTrainedModel
from typing_extensions import Unpack

from lightrft.adapters.hf.response_forward import ForwardOptions, ResponseForward
from lightrft.adapters.hf.weights import frozen_on
from lightrft.adapters.model_parts.host_offload import HostOffload
from lightrft.domain.ports import PolicyOutput
from lightrft.domain.types import SequenceBatch


class HfReferenceModel(HostOffload):
    """A frozen copy of the initial policy for the KL term (also a frozen teacher of
    on-policy distillation, loaded from its own directory).

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
        **forward: Unpack[ForwardOptions],
    ) -> None:
        self._forward = ResponseForward(model, **forward)
        frozen_on(model, device)
        self._model: nn.Module = model
        self._placed, self._device = model, device

    @property
    def module(self) -> nn.Module:
        """The frozen model."""
        return self._model

    def forward(
        self, batch: SequenceBatch, *, temperature: float = 1.0, with_entropy: bool = False
    ) -> PolicyOutput:
        """Log-probs (B, R) of the response tokens (0 on padding), entropy (B, R) if asked."""
        if self._offloaded:
            raise RuntimeError("the reference model is offloaded; call onload() first")
        with torch.no_grad():
            return self._forward.logprobs(
                self._model, batch, temperature=temperature, with_entropy=with_entropy
            )
