"""``JsonlTracker``: the ``Tracker`` port as two append-only JSON Lines files.

``metrics.jsonl`` holds one object per ``log_metrics`` call,
``{"step": s, "time": t, "<name>": value, ...}``; ``samples.jsonl`` holds one object per
sample row, ``{"step": s, **row}``. Each line is written with one ``write`` on a
line-buffered file and flushed, so a crash loses at most the line being written. Files are
opened for appending: a resumed run continues them (readers keep the last value logged for a
step). Non-finite floats are written as the strings ``"nan"``, ``"inf"``, ``"-inf"`` so every
line stays strict JSON; ``float()`` reads them back.
"""

from __future__ import annotations

import contextlib
import json
import math
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from torch import Tensor

METRICS_FILE = "metrics.jsonl"
SAMPLES_FILE = "samples.jsonl"


class JsonlTracker:
    """Appends metrics and samples of a run to ``run_dir/metrics.jsonl`` / ``samples.jsonl``.

    Args:
        run_dir: the run directory (created if missing).
        clock: wall-clock seconds for the ``time`` field (``time.time``; tests inject one).
    """

    def __init__(self, run_dir: Path, *, clock: Callable[[], float] = time.time) -> None:
        self.run_dir = Path(run_dir)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self._clock = clock
        self._metrics: IO[str] | None = None
        self._samples: IO[str] | None = None
        self._closed = False

    @property
    def metrics_path(self) -> Path:
        """``run_dir/metrics.jsonl``."""
        return self.run_dir / METRICS_FILE

    @property
    def samples_path(self) -> Path:
        """``run_dir/samples.jsonl``."""
        return self.run_dir / SAMPLES_FILE

    def log_metrics(self, metrics: Mapping[str, float], step: int) -> None:
        """Appends ``{"step", "time", **metrics}`` (values as floats) as one line."""
        _refuse_reserved(metrics, ("step", "time"))
        record: dict[str, Any] = {"step": int(step), "time": self._clock()}
        record.update({str(name): json_float(value) for name, value in metrics.items()})
        self._metrics = self._write(self._metrics, self.metrics_path, [record])

    def log_samples(self, rows: Sequence[Mapping[str, Any]], step: int) -> None:
        """Appends one line ``{"step", **row}`` per row (tensors become numbers or lists)."""
        for row in rows:
            _refuse_reserved(row, ("step",))
        records = [{"step": int(step), **row} for row in rows]
        if records:
            self._samples = self._write(self._samples, self.samples_path, records)

    def close(self) -> None:
        """Closes both files (idempotent); logging afterwards raises ``RuntimeError``."""
        for f in (self._metrics, self._samples):
            if f is not None:
                f.close()
        self._metrics = self._samples = None
        self._closed = True

    def _write(self, f: IO[str] | None, path: Path, records: list[dict[str, Any]]) -> IO[str]:
        if self._closed:
            raise RuntimeError(f"JsonlTracker of {self.run_dir} used after close")
        try:
            if f is None:
                f = open(path, "a", buffering=1, encoding="utf-8")
            for record in records:
                f.write(json.dumps(json_safe(record), allow_nan=False) + "\n")
            f.flush()
        except OSError as error:  # a full disk raises from write(): name the file
            if f is not None:
                with contextlib.suppress(OSError):  # its torn line is lost, as in a crash
                    f.close()  # so that close() does not raise the same error again
            if error.filename is not None:
                raise
            raise OSError(error.errno, error.strerror or str(error), str(path)) from error
        return f


def json_float(value: float | Tensor) -> float | str:
    """``value`` as a JSON-safe number; non-finite values as ``"nan"``/``"inf"``/``"-inf"``."""
    number = float(value)
    if math.isfinite(number):
        return number
    return "nan" if math.isnan(number) else ("inf" if number > 0 else "-inf")


def json_safe(value: Any) -> Any:
    """``value`` with tensors, NumPy values and non-finite floats made strict-JSON-safe."""
    if isinstance(value, Tensor):
        value = value.item() if value.numel() == 1 else value.tolist()
    elif hasattr(value, "item") and hasattr(value, "dtype"):  # NumPy scalars
        value = value.item()
    if isinstance(value, float):
        return json_float(value)
    if isinstance(value, Mapping):
        return {str(key): json_safe(item) for key, item in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [json_safe(item) for item in value]
    if value is None or isinstance(value, (str, int)):
        return value
    return str(value)


def _refuse_reserved(record: Mapping[str, Any], reserved: tuple[str, ...]) -> None:
    clash = [key for key in reserved if key in record]
    if clash:
        raise ValueError(f"{clash} are reserved keys of the JSONL tracker; rename the metric")
