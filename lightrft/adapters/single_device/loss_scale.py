"""Dynamic loss scaling for fp16 training (Micikevicius et al. 2018, "Mixed Precision
Training", section 3.2).

fp16 gradients below 2**-24 flush to zero. The loss is multiplied by ``scale`` before
backward, and the gradients divided by it (in fp32) before the update. A step whose
gradients overflowed (inf/nan) is skipped and the scale halved; after ``window`` finite steps
in a row the scale doubles. The constants are torch's ``GradScaler`` / DeepSpeed's defaults.
"""

from __future__ import annotations

from typing import Any


class DynamicLossScale:
    """The current loss scale and its update rule."""

    def __init__(
        self, init_scale: float = 2.0**16, window: int = 1000, min_scale: float = 1.0
    ) -> None:
        self.scale = init_scale
        self._window = window
        self._min_scale = min_scale
        self._good_steps = 0

    def update(self, *, finite: bool) -> None:
        """After a step: halve on overflow (not below ``min_scale``), double after
        ``window`` finite steps in a row."""
        if not finite:
            self.scale = max(self.scale / 2.0, self._min_scale)
            self._good_steps = 0
            return
        self._good_steps += 1
        if self._good_steps >= self._window:
            self.scale *= 2.0
            self._good_steps = 0

    def state_dict(self) -> dict[str, Any]:
        """The scale and the count of finite steps since it last changed."""
        return {"scale": self.scale, "good_steps": self._good_steps}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restores :meth:`state_dict` output."""
        self.scale = float(state["scale"])
        self._good_steps = int(state["good_steps"])
