"""A Tracker decorator that draws a progress bar (step, reward, accuracy, ETA) with tqdm."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tqdm import tqdm

from lightrft.domain.ports import Tracker


class ProgressTracker:
    """Forwards everything to ``inner`` and advances a bar of ``total`` steps."""

    def __init__(self, inner: Tracker, total: int, *, start: int = 0, enabled: bool = True) -> None:
        self.inner = inner
        self._bar = tqdm(
            total=total,
            initial=start,
            disable=not enabled,
            unit="step",
            dynamic_ncols=True,
            desc="train",
        )
        self._last = start

    def log_metrics(self, metrics: Mapping[str, float], step: int) -> None:
        """Logs to ``inner``; moves the bar to ``step`` and shows reward and accuracy."""
        self.inner.log_metrics(metrics, step)
        shown = {}
        for key, label in (
            ("reward/mean", "reward"),
            ("eval/accuracy", "eval_acc"),
            ("response_length/mean", "len"),
        ):
            if key in metrics:
                shown[label] = f"{float(metrics[key]):.3f}"
        if shown:
            self._bar.set_postfix(shown, refresh=False)
        if step > self._last:
            self._bar.update(step - self._last)
            self._last = step

    def log_samples(self, rows: Sequence[Mapping[str, Any]], step: int) -> None:
        """Forwards to ``inner``."""
        self.inner.log_samples(rows, step)

    def close(self) -> None:
        """Closes the bar and ``inner``."""
        self._bar.close()
        self.inner.close()
