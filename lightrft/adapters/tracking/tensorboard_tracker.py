"""``TensorBoardTracker``: the ``Tracker`` port on ``torch.utils.tensorboard``.

Metrics become scalars (tag = metric name, so ``reward/mean`` groups under ``reward``);
sample rows become one text entry per step, rendered as an indented code block of JSON
lines (model output cannot turn into markup there).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from lightrft.adapters.tracking.jsonl_tracker import json_safe
from lightrft.adapters.tracking.optional_import import import_optional


class TensorBoardTracker:
    """Writes TensorBoard event files into ``log_dir``.

    Args:
        log_dir: directory of the event files (``tensorboard --logdir`` points at it).
        flush_secs: how often the writer flushes to disk.
    """

    def __init__(self, log_dir: Path, *, flush_secs: int = 30) -> None:
        import_optional("tensorboard", "TensorBoardTracker")
        summary = import_optional("torch.utils.tensorboard", "TensorBoardTracker")
        self.log_dir = Path(log_dir)
        self._writer = summary.SummaryWriter(log_dir=str(self.log_dir), flush_secs=flush_secs)
        self._closed = False

    def log_metrics(self, metrics: Mapping[str, float], step: int) -> None:
        """One scalar per metric at ``step`` (non-finite values are written as such)."""
        self._check_open()
        for name, value in metrics.items():
            self._writer.add_scalar(name, float(value), global_step=int(step))

    def log_samples(self, rows: Sequence[Mapping[str, Any]], step: int) -> None:
        """The rows of ``step`` as one ``samples`` text entry (one JSON line per row)."""
        self._check_open()
        if rows:
            self._writer.add_text("samples", samples_as_code_block(rows), global_step=int(step))

    def close(self) -> None:
        """Flushes and closes the event file (idempotent)."""
        if not self._closed:
            self._writer.close()
            self._closed = True

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError(f"TensorBoardTracker of {self.log_dir} used after close")


def samples_as_code_block(rows: Sequence[Mapping[str, Any]]) -> str:
    """Markdown: every row as a JSON line indented by four spaces (a literal code block)."""
    return "\n".join(
        "    " + json.dumps(json_safe(dict(row)), ensure_ascii=False, allow_nan=False)
        for row in rows
    )
