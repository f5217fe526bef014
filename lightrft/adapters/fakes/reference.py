"""``FakeReferenceModel``: the ``ReferenceModel`` port as a frozen copy of a policy's model.

Shape letters: B samples, R response tokens.
"""

from __future__ import annotations

import copy

import torch
from torch import nn

from lightrft.adapters.fakes.fake_model import FakeModel, RecordedPlacement
from lightrft.adapters.fakes.response_logprobs import response_logprobs
from lightrft.domain.ports import PolicyOutput
from lightrft.domain.types import SequenceBatch


class FakeReferenceModel(FakeModel, RecordedPlacement):
    """A frozen deep copy of ``module`` (e.g. ``FakePolicy(...).module`` before training).

    Records ``forward_calls``, ``offloads`` and ``onloads``; ``forward`` while offloaded
    raises ``RuntimeError`` so a test sees a colocation phase bug. Starts loaded.
    """

    def __init__(self, module: nn.Module, *, device: torch.device | None = None) -> None:
        super().__init__(copy.deepcopy(module).eval(), device)
        self._module.requires_grad_(False)
        self.forward_calls = 0

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
