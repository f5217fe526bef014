"""Selecting and printing saved trajectories (``lightrft samples``)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lightrft.adapters.report.reading import read_jsonl

SAMPLES_FILE = "samples.jsonl"


@dataclass(frozen=True)
class SampleFilter:
    """Which rows to keep. ``step=-1`` means the last step that logged samples."""

    step: int | None = None
    min_reward: float | None = None
    max_reward: float | None = None
    finish_reason: str | None = None
    contains: str | None = None
    limit: int | None = None

    def select(self, rows: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
        """The matching rows in file order (at most ``limit``)."""
        step = self.step
        if step == -1 and rows:
            step = max(int(r["step"]) for r in rows)
        kept = [r for r in rows if self._keeps(r, step)]
        return kept if self.limit is None else kept[: self.limit]

    def _keeps(self, row: Mapping[str, Any], step: int | None) -> bool:
        reward = row.get("reward")
        if step is not None and int(row["step"]) != step:
            return False
        if self.min_reward is not None and not (_number(reward) and reward >= self.min_reward):
            return False
        if self.max_reward is not None and not (_number(reward) and reward <= self.max_reward):
            return False
        if self.finish_reason is not None and row.get("finish_reason") != self.finish_reason:
            return False
        return self.contains is None or self.contains in str(row.get("response", ""))


def read_samples(run_dir: Path) -> list[dict[str, Any]]:
    """The rows of ``run_dir/samples.jsonl``; a clear error when there is none."""
    path = Path(run_dir) / SAMPLES_FILE
    if not Path(run_dir).is_dir():
        what = "is not a directory" if Path(run_dir).exists() else "does not exist"
        raise FileNotFoundError(f"run directory {run_dir} {what}")
    if not path.is_file():
        raise FileNotFoundError(f"no {SAMPLES_FILE} in {run_dir}: the run logged no samples")
    return read_jsonl(path)


def format_sample(row: Mapping[str, Any], max_chars: int = 2000) -> str:
    """A terminal block: a header line of facts, the prompt's tail, the response."""
    facts = [f"step {row.get('step')}"]
    for key in ("reward", "advantage", "length", "finish_reason", "group"):
        if row.get(key) is not None:
            value = row[key]
            facts.append(f"{key} {value:.4g}" if isinstance(value, float) else f"{key} {value}")
    rewards = row.get("rewards")
    if isinstance(rewards, Mapping):
        facts += [f"{name} {float(v):.4g}" for name, v in rewards.items()]
    prompt = str(row.get("prompt", ""))
    response = str(row.get("response", ""))
    lines = [
        "=" * 80,
        " | ".join(facts),
        "-- prompt (end) --",
        prompt[-max_chars // 4 :] if len(prompt) > max_chars // 4 else prompt,
        "-- response --",
        response[:max_chars] + ("…" if len(response) > max_chars else ""),
    ]
    return "\n".join(lines)


def format_samples(rows: Sequence[Mapping[str, Any]], *, as_json: bool = False) -> str:
    """Every row as a block (or as JSON lines) and a count line."""
    if as_json:
        return "\n".join(json.dumps(r) for r in rows)
    blocks = [format_sample(r) for r in rows]
    return "\n".join([*blocks, f"{len(rows)} sample(s)"])


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
