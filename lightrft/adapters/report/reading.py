"""Reads the JSON Lines files a ``JsonlTracker`` wrote.

A crash can leave a partly written last line; it is skipped. A resumed run re-logs steps
after its checkpoint: for each metric the value logged last for a step wins.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

Series = list[tuple[int, float]]


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """The objects of ``path``, one per line; a broken *last* line is dropped (the line
    being written when the run died: cut JSON, or bytes cut inside a UTF-8 character).

    Raises ``ValueError`` naming the file and line (``FILE:N``, from 1, as an editor counts) for a
    broken line elsewhere: not UTF-8, not JSON, not an object with a ``step``.
    """
    raw_lines = path.read_bytes().splitlines()
    last = max((n for n, raw in enumerate(raw_lines, start=1) if raw.strip()), default=0)
    records: list[dict[str, Any]] = []
    for number, raw in enumerate(raw_lines, start=1):
        if not raw.strip():
            continue
        try:
            record = json.loads(raw.decode("utf-8"))
        except UnicodeDecodeError as error:
            if number == last:
                break
            raise ValueError(
                f"{path}:{number} is not UTF-8 text (byte {error.start} of the line)"
            ) from None
        except json.JSONDecodeError as error:
            if number == last:
                break  # the line being written when the run died
            raise ValueError(f"{path}:{number} is not valid JSON: {error}") from error
        if not isinstance(record, dict) or "step" not in record:
            raise ValueError(f"{path}:{number} is not an object with a 'step'")
        records.append(record)
    return records


def metric_series(records: list[dict[str, Any]]) -> dict[str, Series]:
    """``{name: [(step, value), ...]}`` sorted by step, numeric values only.

    ``"nan"``/``"inf"``/``"-inf"`` strings become floats; ``step`` and ``time`` are not
    metrics; a step logged twice keeps its later value.
    """
    by_name: dict[str, dict[int, float]] = {}
    for record in records:
        step = int(record["step"])
        for name, value in record.items():
            if name in ("step", "time"):
                continue
            number = _as_float(value)
            if number is not None:
                by_name.setdefault(name, {})[step] = number
    return {name: sorted(points.items()) for name, points in by_name.items()}


def _as_float(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str) and value in ("nan", "inf", "-inf"):
        return float(value)
    return None


def value_at(series: Series, step: int) -> float | None:
    """The value of ``series`` at ``step``, or ``None``."""
    return next((value for s, value in series if s == step), None)


def is_finite(value: float | None) -> bool:
    """Whether ``value`` is a finite number."""
    return value is not None and math.isfinite(value)
