"""Parts every training strategy implements the same way (single device, FSDP2, DeepSpeed,
the fake): the prepared module, and the rollback scale on the scheduled learning rate.
"""

from __future__ import annotations

from torch import nn

from lightrft.adapters.strategy_parts.lr_schedule import checked_lr_scale, learning_rate
from lightrft.domain.types import OptimizerParams


class LrScaled:
    """Mixin: ``set_lr_scale`` (``train.on_collapse: rollback`` lowers the rate with it)."""

    _lr_scale: float = 1.0

    def set_lr_scale(self, scale: float) -> None:
        """Multiplies the scheduled rate of every later step by ``scale``."""
        self._lr_scale = checked_lr_scale(scale)


class CountedSchedule(LrScaled):
    """Mixin of strategies that count applied steps (``_steps``) over ``_optim``'s schedule."""

    _steps: int
    _optim: OptimizerParams

    @property
    def current_lr(self) -> float:
        """The learning rate the next applied step will use."""
        return learning_rate(self._steps, self._optim) * self._lr_scale


class PreparedModule:
    """Mixin: ``module``, the module ``prepare`` was given (an error before it)."""

    _module: nn.Module | None

    @property
    def module(self) -> nn.Module:
        """The prepared module."""
        if self._module is None:
            raise RuntimeError("call prepare(module) first")
        return self._module
