"""``FakeReferenceModel``: the ``ReferenceModel`` port as a frozen copy of a policy's model.

Shape letters: B samples, R response tokens.
"""

from __future__ import annotations

import copy

import torch
from torch import nn

from lightrft.adapters.fakes.response_logprobs import response_logprobs
from lightrft.domain.ports import PolicyOutput
from lightrft.domain.types import SequenceBatch


class FakeReferenceModel:
    """A frozen deep copy of ``module`` (e.g. ``FakePolicy(...).module`` before training).

    Records ``forward_calls``, ``offloads`` and ``onloads``; ``forward`` while offloaded
    raises ``RuntimeError`` so a test sees a colocation phase bug. Starts loaded.
    """

    def __init__(self, module: nn.Module, *, device: torch.device | None = None) -> None:
        self.device = device or torch.device("cpu")
        self._module = copy.deepcopy(module).to(self.device).eval()
        self._module.requires_grad_(False)
        self.is_loaded = True
        self.forward_calls = 0
        self.offloads = 0
        self.onloads = 0

    @property
    def module(self) -> nn.Module:
        """The frozen model (read-only use)."""
        return self._module

    def forward(
        self, batch: SequenceBatch, *, temperature: float = 1.0, with_entropy: bool = False
    ) -> PolicyOutput:
        """Log-probs (B, R) of the response tokens, 0 on padding, never with autograd."""
        if not self.is_loaded:
            raise RuntimeError("FakeReferenceModel.forward called while offloaded; onload first")
        self.forward_calls += 1
        with torch.no_grad():
            return response_logprobs(
                self._module, batch, self.device, temperature=temperature, with_entropy=with_entropy
            )

    def offload(self) -> None:
        """Marks the weights as moved to host memory (CPU: nothing moves)."""
        self.offloads += 1
        self.is_loaded = False

    def onload(self) -> None:
        """Marks the weights as back on the device."""
        self.onloads += 1
        self.is_loaded = True
