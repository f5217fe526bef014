"""What the model-holding fakes share: one small module on a device, and recorded moves.

- :class:`FakeModel`: the module on ``device`` (CPU by default) behind a ``module`` property
  (``FakeReferenceModel``; through :class:`SeededTinyModel`, ``FakePolicy`` and
  ``FakeCritic``);
- :class:`SeededTinyModel`: a fresh tiny GRU model whose weights depend only on ``seed``;
- :class:`RecordedPlacement`: ``offload`` / ``onload`` that count the moves and say where the
  weights are (on CPU nothing moves), for the fakes of ports with a placement.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

import torch
from torch import nn

from lightrft.adapters.fakes.tiny_lm import seeded


class FakeModel:
    """A fake port around one small ``module``, moved to ``device`` (default: CPU)."""

    def __init__(self, module: nn.Module, device: torch.device | None = None) -> None:
        self.device = device or torch.device("cpu")
        self._module = module.to(self.device)

    @property
    def module(self) -> nn.Module:
        """The fake's model (a strategy trains it; a reference only reads it)."""
        return self._module


class SeededTinyModel(FakeModel):
    """A fake on ``architecture(vocab_size, hidden)`` initialized from ``seed`` alone."""

    architecture: ClassVar[Callable[[int, int], nn.Module]]

    def __init__(
        self,
        vocab_size: int = 16,
        hidden: int = 32,
        seed: int = 0,
        *,
        device: torch.device | None = None,
    ) -> None:
        build = type(self).architecture
        super().__init__(seeded(seed, lambda: build(vocab_size, hidden)), device)


class RecordedPlacement:
    """Counts ``offloads`` / ``onloads``; ``is_loaded`` says where the weights are."""

    is_loaded: bool = True
    offloads: int = 0
    onloads: int = 0

    @property
    def is_offloaded(self) -> bool:
        """Whether the weights are (marked as) in host memory."""
        return not self.is_loaded

    def offload(self) -> None:
        """Marks the weights as moved to host memory (CPU: nothing moves)."""
        self.offloads += 1
        self.is_loaded = False

    def onload(self) -> None:
        """Marks the weights as back on the device."""
        self.onloads += 1
        self.is_loaded = True
