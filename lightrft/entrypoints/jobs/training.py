"""`lightrft train`: build the cycle from a config, run it, export, report before/after."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import structlog

from lightrft.adapters.tracking.progress import ProgressTracker
from lightrft.adapters.tracking.token_text import TokenTextTracker
from lightrft.application.cycle import RLCycle
from lightrft.application.phases import Phase
from lightrft.domain.checkpoint_fit import CheckpointShapeError
from lightrft.entrypoints.config import RunConfig
from lightrft.entrypoints.data_report import prompt_counts, report_prompt_counts
from lightrft.entrypoints.graceful_stop import GracefulStop
from lightrft.entrypoints.logging_setup import apply_config_logging
from lightrft.entrypoints.next_command import NextCommand
from lightrft.entrypoints.roots.model_run import ModelRunRoot
from lightrft.entrypoints.roots.tokenizer import Tokenizer
from lightrft.entrypoints.roots.training import TrainingRoot, training_root
from lightrft.entrypoints.run_dir.directory import trim_logs_after
from lightrft.entrypoints.run_dir.final_export import FinalState, write_final
from lightrft.entrypoints.run_dir.guard import (
    RunStart,
    config_request,
    guard_run_directory,
    recorded_config_text,
)
from lightrft.entrypoints.run_dir.identity import RL_IDENTITY
from lightrft.entrypoints.run_dir.log_write import full_disk_explained

log = structlog.get_logger(__name__)


def train(config: RunConfig, *, next_command: NextCommand | None = None) -> dict[str, Any]:
    """Runs the configured training; returns a summary (eval before/after, steps, paths).

    Rank 0 holds the run directory's lock for the whole run and checks a resume's identity
    (see :mod:`~lightrft.entrypoints.run_dir.guard`). ``summary["stopped_early"]`` is true
    when SIGTERM stopped the run after a checkpoint. ``next_command``: what a failed export
    tells the user to run.
    """
    apply_config_logging(json_logs=config.logging.json_logs)
    root = training_root(config)
    config = with_episode_steps(config, root)
    processes = root.process_collective()
    request = config_request(config, RL_IDENTITY)
    with guard_run_directory(request, processes) as start:
        return _train_in(config, root, start, next_command or NextCommand())


def episode_steps(episodes: int, prompts: int, prompts_per_step: int, ranks: int) -> int:
    """RL steps of ``episodes`` passes over ``prompts``: a step takes ``prompts_per_step``
    prompts on each of ``ranks`` ranks (the last step of a pass may wrap into the next)."""
    return episodes * -(-prompts // (prompts_per_step * ranks))


def with_episode_steps(config: RunConfig, root: TrainingRoot) -> RunConfig:
    """``config`` with ``train.total_steps`` from ``train.episodes`` and the size of the
    training set (read through ``root``, whose config it then replaces)."""
    episodes = config.train.episodes
    if episodes is None:
        return config
    prompts = len(root.prompts())
    ranks = root.collective().world_size
    steps = episode_steps(episodes, prompts, config.rollout.prompts_per_step, ranks)
    train = config.train.model_copy(update={"total_steps": steps})
    updated = config.model_copy(update={"train": train})
    root.replace_config(updated)
    log.info("train.episodes", episodes=episodes, prompts=prompts, ranks=ranks, total_steps=steps)
    return updated


def _train_in(
    config: RunConfig, root: TrainingRoot, start: RunStart, next_command: NextCommand
) -> dict[str, Any]:
    run_dir = Path(config.logging.run_dir)
    collective = root.collective()
    main = root.process()[0] == 0  # with sequence parallelism, not every DP rank 0
    tracker = root.tracker()
    if main:
        tracker = ProgressTracker(
            TokenTextTracker(tracker, _token_decoder(root.tokenizer())),
            config.train.total_steps,
            enabled=config.logging.progress,
        )
        root.use_tracker(tracker)
    log.info(
        "run.start",
        run_dir=str(run_dir),
        algorithm=config.algorithm.advantage_estimator,
        policy_loss=config.algorithm.policy_loss,
        world_size=collective.world_size,
        start=start.start,
    )
    cycle = root.cycle()
    counts = prompt_counts(root.prompts(), root.eval_prompts())
    checkpoints = run_dir / "checkpoints"
    try:
        with full_disk_explained(lambda: root.checkpoints().steps(), checkpoints, next_command):
            if start.resumes:
                try:
                    cycle.resume()
                except CheckpointShapeError as exc:
                    raise exc.explained(str(checkpoints), config.model.path) from None
                if main:
                    trim_logs_after(run_dir, cycle.state.step)
            if main:  # step 0 of metrics.jsonl once, not again on resume
                report_prompt_counts(counts, tracker if not start.resumes else None)
            start.record(cycle.state.step, recorded_config_text(config))
            with GracefulStop(collective) as stop:
                history = cycle.run(resume=False, should_stop=stop.requested)
    finally:
        tracker.close()
        for source in root.reward_sources():
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
        final = _final_state(cycle, root, run_dir)
        summary.update(export_policy(root, run_dir, main, final, next_command))
    if main:
        (run_dir / "summary.json").write_text(json.dumps(summary, indent=2))
    log.info("run.done", **summary)
    return summary


def _token_decoder(tokenizer: Tokenizer) -> Callable[[int], str]:
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


def _final_state(cycle: RLCycle, root: TrainingRoot, run_dir: Path) -> FinalState:
    """The cycle's final state; its checkpoint is saved in the training phase (the cycle
    put everything to sleep when it ended)."""

    def save() -> None:
        with cycle.phases.phase(Phase.TRAIN):
            cycle.save_checkpoint()
        cycle.phases.rest()

    return FinalState(root.checkpoints(), cycle.state.step, save, run_dir / "checkpoints")


def export_policy(
    root: ModelRunRoot,
    run_dir: Path,
    main: bool,
    final: FinalState,
    next_command: NextCommand | None = None,
) -> dict[str, str]:
    """Writes the trained policy (rank 0 writes), each directory atomically, after making
    sure a checkpoint holds the final state (see
    :mod:`~lightrft.entrypoints.run_dir.final_export`): ``final_model/``, a plain HF model
    directory (LoRA merged), and under LoRA also ``final_adapter/``, the PEFT adapter alone.
    Returns their paths by summary key."""
    kept = final.secure()  # every rank: a checkpoint save is collective
    strategy = root.policy_strategy()
    policy = root.policy()
    strategy.onload()  # the cycle put everything to sleep when it ended
    state = strategy.export_full_state_dict()  # sharded: every rank joins, rank 0 writes
    paths = {"final_model": run_dir / "final_model"}
    if policy.uses_lora:
        paths["final_adapter"] = run_dir / "final_adapter"
    if main:
        command = next_command or NextCommand()
        write_final(
            paths["final_model"],
            lambda tmp: policy.export_hf(tmp, state=state),
            kept,
            command,
            state=state,
        )
        if "final_adapter" in paths:
            write_final(
                paths["final_adapter"],
                lambda tmp: policy.export_adapter(tmp, state=state),
                kept,
                command,
            )
    return {key: str(path) for key, path in paths.items()}
