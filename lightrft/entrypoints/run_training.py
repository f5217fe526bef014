"""`lightrft train`: build the cycle from a config, run it, export, report before/after."""

from __future__ import annotations

import json
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import structlog
import torch

from lightrft.adapters.distributed import TorchCollective
from lightrft.adapters.tracking.progress import ProgressTracker
from lightrft.adapters.tracking.token_text import TokenTextTracker
from lightrft.domain.ports import Collective
from lightrft.entrypoints.api import build_container
from lightrft.entrypoints.config import RunConfig
from lightrft.entrypoints.config.loading import dump_config
from lightrft.entrypoints.data_report import prompt_counts, report_prompt_counts
from lightrft.entrypoints.graceful_stop import GracefulStop
from lightrft.entrypoints.logging_setup import apply_config_logging
from lightrft.entrypoints.run_directory import (
    RunDirectoryError,
    RunDirectoryLock,
    Start,
    decide_start,
    trim_logs_after,
)

log = structlog.get_logger(__name__)


def train(config: RunConfig) -> dict[str, Any]:
    """Runs the configured training; returns a summary (eval before/after, steps, paths).

    Rank 0 holds the run directory's lock for the whole run (see :mod:`run_directory`).
    ``summary["stopped_early"]`` is true when SIGTERM stopped the run after a checkpoint.
    """
    apply_config_logging(json_logs=config.logging.json_logs)
    run_dir = Path(config.logging.run_dir)
    container = build_container(config)
    processes = _process_collective(container)
    with ExitStack() as stack:
        if processes.rank == 0:
            stack.enter_context(RunDirectoryLock(run_dir))
        start = _agree_start(config, processes)
        return _train_in(config, container, start)


def _process_collective(container: Any) -> Collective:
    """A collective over every process: the data-parallel one, or with sequence
    parallelism (whose data-parallel ranks are not all processes) the default group."""
    _, world = container.process()
    collective: Collective = container.collective()
    return TorchCollective() if world != collective.world_size else collective


def _agree_start(config: RunConfig, collective: Collective) -> Start:
    """Rank 0 decides fresh / resume (moving a previous run aside on overwrite); the other
    ranks learn its decision, or that it refused."""
    run_dir = Path(config.logging.run_dir)
    error: RunDirectoryError | None = None
    start: Start = "fresh"
    if collective.rank == 0:
        try:
            start = decide_start(run_dir, config.checkpoint.resume, config.logging.overwrite)
        except RunDirectoryError as exc:
            error = exc
    if collective.world_size > 1:
        code = 0.0 if collective.rank else {"fresh": 1.0, "resume": 2.0}[start] * (not error)
        agreed = int(collective.all_reduce_sum(torch.tensor([code], dtype=torch.float64)))
        if agreed == 0 and error is None:
            error = RunDirectoryError(f"rank 0 refused run directory {run_dir}: see its log")
        start = "resume" if agreed == 2 else "fresh"
    if error is not None:
        raise error
    return start


def _train_in(config: RunConfig, container: Any, start: Start) -> dict[str, Any]:
    run_dir = Path(config.logging.run_dir)
    collective = container.collective()
    main = container.process()[0] == 0  # with sequence parallelism, not every DP rank 0
    if main:
        run_dir.mkdir(parents=True, exist_ok=True)
        (run_dir / "config.yaml").write_text(dump_config(config))
    tracker = container.tracker()
    if main:
        tracker = ProgressTracker(
            TokenTextTracker(tracker, _token_decoder(container.tokenizer())),
            config.train.total_steps,
            enabled=config.logging.progress,
        )
        container.tracker.override(tracker)
    log.info(
        "run.start",
        run_dir=str(run_dir),
        algorithm=config.algorithm.advantage_estimator,
        policy_loss=config.algorithm.policy_loss,
        world_size=collective.world_size,
        start=start,
    )
    cycle = container.cycle()
    counts = prompt_counts(container.prompts(), container.eval_prompts())
    try:
        if start == "resume":
            cycle.resume()
            if main:
                trim_logs_after(run_dir, cycle.state.step)
        if main:  # step 0 of metrics.jsonl once, not again on resume
            report_prompt_counts(counts, tracker if start == "fresh" else None)
        with GracefulStop(collective) as stop:
            history = cycle.run(resume=False, should_stop=stop.requested)
    finally:
        tracker.close()
        for source in container.reward_sources():
            source.close()
    summary: dict[str, Any] = {"steps": cycle.state.step, "run_dir": str(run_dir), **counts}
    if cycle.stopped_early:  # SIGTERM: checkpointed; no export, no summary.json
        summary["stopped_early"] = True
        return summary
    evals = [m for m in history if "eval/accuracy" in m]
    before = _first_eval(run_dir) if main else None
    if before is not None:
        summary["eval_accuracy_before"] = before
    if evals:
        summary["eval_accuracy_after"] = evals[-1]["eval/accuracy"]
    summary["health"] = cycle.health.summary()
    if config.checkpoint.export_final:
        summary.update(export_policy(container, run_dir, main))
    if main:
        (run_dir / "summary.json").write_text(json.dumps(summary, indent=2))
    log.info("run.done", **summary)
    return summary


def _token_decoder(tokenizer: Any) -> Any:
    """One token's text (special tokens kept, so EOS shows where a response stopped)."""
    return lambda token_id: str(tokenizer.decode([token_id], skip_special_tokens=False))


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


def export_policy(container: Any, run_dir: Path, main: bool) -> dict[str, str]:
    """Writes the trained policy (rank 0 writes): ``final_model/``, a plain HF model
    directory (LoRA merged), and under LoRA also ``final_adapter/``, the PEFT adapter alone.
    Returns their paths by summary key."""
    strategy = container.policy_strategy()
    policy = container.policy()
    strategy.onload()  # the cycle put everything to sleep when it ended
    state = strategy.export_full_state_dict()  # sharded: every rank joins, rank 0 writes
    paths = {"final_model": run_dir / "final_model"}
    if policy.uses_lora:
        paths["final_adapter"] = run_dir / "final_adapter"
    if main:
        policy.export_hf(paths["final_model"], state=state)
        if "final_adapter" in paths:
            policy.export_adapter(paths["final_adapter"], state=state)
    return {key: str(path) for key, path in paths.items()}
