"""``WandbTracker``: the ``Tracker`` port on Weights & Biases (``wandb`` imported lazily).

Offline runs: set ``WANDB_MODE=offline`` in the environment (or pass ``mode="offline"``);
with ``mode=None`` the tracker passes no mode, so wandb's own environment handling decides.
W&B requires non-decreasing steps: after a resume, steps already logged are dropped by wandb
(the JSONL tracker keeps them).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from lightrft.adapters.tracking.jsonl_tracker import json_safe
from lightrft.adapters.tracking.optional_import import import_optional


class WandbTracker:
    """Logs to a W&B run whose local files live under ``run_dir``.

    Args:
        run_dir: the run directory (wandb writes ``run_dir/wandb/``).
        project: W&B project (``None``: wandb's default / ``WANDB_PROJECT``).
        name: display name of the run.
        config: the resolved run configuration, shown in the W&B UI.
        mode: ``"online"``, ``"offline"`` or ``"disabled"``; ``None`` leaves it to wandb
            (which reads ``WANDB_MODE``).
        init_kwargs: further ``wandb.init`` arguments (entity, tags, group, ...).
    """

    def __init__(
        self,
        run_dir: Path,
        *,
        project: str | None = None,
        name: str | None = None,
        config: Mapping[str, Any] | None = None,
        mode: str | None = None,
        init_kwargs: Mapping[str, Any] | None = None,
    ) -> None:
        self._wandb = import_optional("wandb", "WandbTracker")
        self.run_dir = Path(run_dir)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        kwargs: dict[str, Any] = {"dir": str(self.run_dir), **dict(init_kwargs or {})}
        if project is not None:
            kwargs["project"] = project
        if name is not None:
            kwargs["name"] = name
        if config is not None:
            kwargs["config"] = dict(config)
        if mode is not None:
            kwargs["mode"] = mode
        self._run = self._wandb.init(**kwargs)
        self._closed = False

    def log_metrics(self, metrics: Mapping[str, float], step: int) -> None:
        """``run.log({name: float}, step=step)``."""
        self._check_open()
        self._run.log({name: float(value) for name, value in metrics.items()}, step=int(step))

    def log_samples(self, rows: Sequence[Mapping[str, Any]], step: int) -> None:
        """The rows of ``step`` as a ``samples`` table (columns: union of the row keys)."""
        self._check_open()
        if not rows:
            return
        columns = list(dict.fromkeys(key for row in rows for key in row))
        data = [[json_safe(row.get(column)) for column in columns] for row in rows]
        table = self._wandb.Table(columns=columns, data=data)
        self._run.log({"samples": table}, step=int(step))

    def close(self) -> None:
        """Finishes the W&B run (idempotent)."""
        if not self._closed:
            self._run.finish()
            self._closed = True

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("WandbTracker used after close")
