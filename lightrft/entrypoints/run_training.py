"""`lightrft train`: build the cycle from a config, run it, export, report before/after."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import structlog

from lightrft.adapters.tracking.progress import ProgressTracker
from lightrft.entrypoints.api import build_container
from lightrft.entrypoints.config import RunConfig
from lightrft.entrypoints.config.loading import dump_config
from lightrft.entrypoints.logging_setup import apply_config_logging

log = structlog.get_logger(__name__)


def train(config: RunConfig) -> dict[str, Any]:
    """Runs the configured training; returns a summary (eval before/after, steps, paths)."""
    apply_config_logging(json_logs=config.logging.json_logs)
    run_dir = Path(config.logging.run_dir)
    container = build_container(config)
    collective = container.collective()
    main = collective.rank == 0
    if main:
        run_dir.mkdir(parents=True, exist_ok=True)
        (run_dir / "config.yaml").write_text(dump_config(config))
    tracker = container.tracker()
    if main:
        tracker = ProgressTracker(
            tracker, config.train.total_steps, enabled=config.logging.progress
        )
        container.tracker.override(tracker)
    log.info(
        "run.start",
        run_dir=str(run_dir),
        algorithm=config.algorithm.advantage_estimator,
        policy_loss=config.algorithm.policy_loss,
        world_size=collective.world_size,
    )
    cycle = container.cycle()
    try:
        history = cycle.run(resume=config.checkpoint.resume)
    finally:
        tracker.close()
        for source in container.reward_sources():
            source.close()
    summary: dict[str, Any] = {"steps": cycle.state.step, "run_dir": str(run_dir)}
    evals = [m for m in history if "eval/accuracy" in m]
    before = _first_eval(run_dir) if main else None
    if before is not None:
        summary["eval_accuracy_before"] = before
    if evals:
        summary["eval_accuracy_after"] = evals[-1]["eval/accuracy"]
    if config.checkpoint.export_final:
        summary["final_model"] = str(_export(container, run_dir / "final_model", main))
    if main:
        (run_dir / "summary.json").write_text(json.dumps(summary, indent=2))
    log.info("run.done", **summary)
    return summary


def _first_eval(run_dir: Path) -> float | None:
    """The evaluation logged before training (step 0) in ``metrics.jsonl``, if any."""
    metrics = run_dir / "metrics.jsonl"
    if not metrics.exists():
        return None
    for line in metrics.read_text().splitlines():
        row = json.loads(line)
        if row.get("step") == 0 and "eval/accuracy" in row:
            return float(row["eval/accuracy"])
    return None


def _export(container: Any, directory: Path, main: bool) -> Path:
    """Writes the trained policy as a plain HF model directory (rank 0 writes)."""
    strategy = container.policy_strategy()
    policy = container.policy()
    strategy.onload()  # the cycle put everything to sleep when it ended
    state = strategy.export_full_state_dict()  # sharded: every rank joins, rank 0 writes
    if main:
        policy.export_hf(directory, state=state)
    return directory
