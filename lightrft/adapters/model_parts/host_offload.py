"""``HostOffload``: a frozen model that moves between its device and host memory.

The reference model and the scalar reward model sit on the device only while they score;
between uses their weights go to host memory. Both count the moves (``offloads`` /
``onloads``) and refuse to run while offloaded; this mixin holds that once.
"""

from __future__ import annotations

import torch
from torch import nn

HOST = torch.device("cpu")


class HostOffload:
    """Mixin: :meth:`offload` / :meth:`onload` move ``self._placed`` between host memory and
    ``self._device``; ``is_offloaded``, ``offloads`` and ``onloads`` record them."""

    _placed: nn.Module
    _device: torch.device
    _offloaded: bool = False
    offloads: int = 0
    onloads: int = 0

    @property
    def is_offloaded(self) -> bool:
        """Whether the weights sit in host memory."""
        return self._offloaded

    def offload(self) -> None:
        """Moves the weights to host memory."""
        self._placed.to(HOST)
        self._offloaded = True
        self.offloads += 1

    def onload(self) -> None:
        """Moves the weights back to the device."""
        self._placed.to(self._device)
        self._offloaded = False
        self.onloads += 1
