"""A gate on the client optimizer's ``step``: how a skipped update stays exact.

``engine.step()`` reduces the accumulated gradients, computes the global norm, clips, calls
the client optimizer (torch AdamW or DeepSpeedCPUAdam) on the fp32 master weights and
clears every gradient buffer. To skip an update the strategy lets all of that happen except
the client optimizer's step: the gate, installed on that optimizer instance, swallows the
call while it is closed. Master weights, AdamW moments and AdamW's step count are then
untouched, the low-precision parameters are re-copied from the unchanged master weights,
and the gradients are cleared as after any step.

DeepSpeed itself already skips (never calls the optimizer) when the global norm is not
finite under ZeRO 1-3. Under stage 0 (no ZeRO optimizer) the gate measures the global norm
of the (already all-reduced, full) gradients, clips to ``max_norm``, and closes on a
non-finite norm.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import nn


class StepGate:
    """Installed on ``optimizer``; :meth:`arm` before each ``engine.step()``.

    Args:
        optimizer: the client optimizer handed to ``deepspeed.initialize``.
        clip_params: stage 0 only: the parameters whose gradients the gate measures and
            clips (``None`` under ZeRO, where DeepSpeed does both).
        max_norm: stage 0 clipping threshold (``None``: no clipping).
    """

    def __init__(
        self,
        optimizer: torch.optim.Optimizer,
        *,
        clip_params: Sequence[nn.Parameter] | None = None,
        max_norm: float | None = None,
    ) -> None:
        self._inner_step: Callable[..., Any] = optimizer.step
        self._clip_params = None if clip_params is None else list(clip_params)
        self._max_norm = max_norm
        self._open = True
        self.calls = 0  # client optimizer steps asked for since arm()
        self.applied = 0  # ... of which really ran
        self.norm: float | None = None  # stage 0: the pre-clip global norm
        optimizer.step = self._step  # type: ignore[method-assign]

    def arm(self, *, open_: bool) -> None:
        """Opens (update allowed) or closes (update swallowed) the gate for one step."""
        self._open = open_
        self.calls = 0
        self.applied = 0
        self.norm = None

    def _step(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        if self._clip_params is not None and self.calls == 1:
            self.norm = self._measure_and_clip()
            if not math.isfinite(self.norm):
                self._open = False
        if not self._open:
            return None
        self.applied += 1
        return self._inner_step(*args, **kwargs)

    def _measure_and_clip(self) -> float:
        params = [p for p in self._clip_params or () if p.grad is not None]
        if not params:
            return 0.0
        grads = [p.grad for p in params if p.grad is not None]
        norm = torch.nn.utils.get_total_norm(grads, norm_type=2.0)
        if self._max_norm is not None and self._open and bool(torch.isfinite(norm)):
            torch.nn.utils.clip_grads_with_norm_(params, self._max_norm, norm)
        return float(norm)
