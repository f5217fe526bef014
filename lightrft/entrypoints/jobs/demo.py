"""`lightrft demo` (and `demo ttrl`): GRPO with a recipe's overrides, then the run's report and
its held-out greedy accuracy before and after. The recipes are in ``recipes/``."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from lightrft.adapters.report import render_report
from lightrft.entrypoints.config.loading import load_config
from lightrft.entrypoints.jobs.training import train
from lightrft.entrypoints.next_command import NextCommand


def run_grpo_demo(overrides: Sequence[str], argv: tuple[str, ...] | None) -> int:
    """Trains the grpo preset with ``overrides`` (a recipe's list, then the user's); ``argv``:
    the command line, for "run this next" messages. Returns the exit status."""
    config = load_config(None, list(overrides), algorithm="grpo")
    summary = train(config, next_command=NextCommand(argv, config.logging.overwrite))
    page = render_report(Path(summary["run_dir"]))
    before, after = _held_out_accuracy(Path(summary["run_dir"]))
    print(json.dumps(summary, indent=2))
    if before is not None and after is not None:
        print(
            f"held-out accuracy: before {before:.3f} -> after {after:.3f} ({after - before:+.3f})"
        )
    print(f"report: {page}")
    return 0


def _held_out_accuracy(run_dir: Path) -> tuple[float | None, float | None]:
    """First and last held-out accuracy of a run: the math rule's when it is measured (the
    TTRL demo's combined reward is agreement, not correctness), else the combined one's."""
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    for key in ("eval/reward/math/accuracy", "eval/accuracy"):
        values = [row[key] for row in rows if key in row]
        if values:
            return values[0], values[-1] if len(values) > 1 else None
    return None, None
