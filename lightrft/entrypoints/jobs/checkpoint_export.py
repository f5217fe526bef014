"""Any checkpoint of a run (RL or SFT; single device, FSDP2, DeepSpeed ZeRO 0-3, LoRA) as a
Hugging Face model directory, offline, in one process on the host.

The run's ``config.yaml`` says how the policy was built and trained; the policy is built
again on the CPU (the same loader, dtype and LoRA wrapping), the checkpoint's per-rank
strategy states are merged into its full state (:mod:`wiring.checkpoint_merge`, by
``backend.strategy.type``), and that state is written by the same
``Policy.export_hf`` / ``export_adapter`` calls as the run's own final export: the model
directory (LoRA merged) and, under LoRA, the PEFT adapter in ``OUT/adapter``.

What it reads is checked as a resume checks it (:func:`load_intact`: the recorded
checksums, then safe loading): a damaged checkpoint is refused naming the file. ``OUT`` may
not be, hold or lie inside a run directory, and one that is not empty is refused unless
``force`` (its contents are moved aside to ``OUT.old-<UTC time>``, nothing is deleted). The
run's lock is held while reading, so an export never races a run writing the directory; the
model directory is written atomically (complete or absent), a full disk ends in
:class:`ExportWriteError` (one line, nothing half-written left).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import structlog
from torch import Tensor, nn

from lightrft.adapters.checkpoint import LocalCheckpointStore
from lightrft.adapters.checkpoint.directory_swap import replace_directory
from lightrft.adapters.checkpoint.verify import checkpoint_stores
from lightrft.application.checkpoint_resume import load_intact
from lightrft.entrypoints.roots.checkpoint_export import CheckpointExportRoot
from lightrft.entrypoints.roots.model_run import ExportablePolicy
from lightrft.entrypoints.run_dir.directory import (
    RunDirectoryLock,
    checkpoint_steps,
    set_aside_path,
)
from lightrft.entrypoints.run_dir.output_target import check_output_directory
from lightrft.entrypoints.run_dir.write_advice import state_bytes, write_failure_advice

log = structlog.get_logger(__name__)
STRATEGY_KEYS = ("policy_strategy", "strategy")  # RL cycle, single-model trainers (SFT)


@dataclass(frozen=True)
class Exported:
    """Where the export went: the model directory and, under LoRA, the adapter."""

    step: int
    model: Path
    adapter: Path | None


class ExportWriteError(OSError):
    """Writing the exported model failed (a full disk); the run is untouched and nothing
    half-written is left. Without an ``errno``: the message is the whole story."""


def export_checkpoint(
    run_dir: Path, out: Path, step: int | None = None, *, force: bool = False
) -> Exported:
    """Writes checkpoint ``step`` (default: the newest one every rank has) of ``run_dir`` to
    ``out`` (atomically; a non-empty ``out`` only with ``force``, its contents moved aside).
    Raises ``FileNotFoundError`` / ``ValueError`` / ``RunDirectoryError`` /
    ``DamagedCheckpointError`` / :class:`ExportWriteError` with one line naming what is
    wrong."""
    config_file = run_dir / "config.yaml"
    if not config_file.is_file():
        raise FileNotFoundError(f"{config_file} does not exist; expected a lightrft run directory")
    checkpoints = run_dir / "checkpoints"
    if not checkpoints.is_dir():
        raise FileNotFoundError(f"{run_dir} has no checkpoints directory")
    _chosen_step(checkpoint_steps(checkpoints), step, run_dir)  # a missing step named first
    occupied = check_output_directory(out, run_dir, "--out", force=force)
    with _run_lock(run_dir):  # no run writes the checkpoints while they are read
        root = CheckpointExportRoot(config_file)
        stores = [
            LocalCheckpointStore(path, keep_last=None) for path in checkpoint_stores(checkpoints)
        ]
        step = _chosen_step(checkpoint_steps(checkpoints), step, run_dir)
        rank_states = [
            _strategy_state(load_intact(store, step), store.directory(step)) for store in stores
        ]
    policy = root.policy()
    state = _complete(root.merger()(rank_states, policy.module), policy.module)
    aside = set_aside_path(out) if occupied else None
    try:
        replace_directory(out, lambda tmp: _write(policy, state, tmp), previous_to=aside)
    except OSError as error:
        raise ExportWriteError(_write_failure(out, error, state_bytes(state))) from error
    if aside is not None:
        log.warning("checkpoints.previous_output_moved", directory=str(out), to=str(aside))
    log.info("checkpoints.exported", step=step, directory=str(out), ranks=len(stores))
    return Exported(step, out, out / "adapter" if policy.uses_lora else None)


@contextmanager
def _run_lock(run_dir: Path) -> Iterator[None]:
    """The run's lock while the body runs (refused: the run is in use). A run directory this
    process may not write (another user's, read-only storage) is read without it, logged
    (``checkpoints.export_unlocked``): a run writing there then is not detected."""
    lock = RunDirectoryLock(run_dir)
    try:
        lock.acquire()
    except PermissionError as error:
        log.warning("checkpoints.export_unlocked", run_dir=str(run_dir), reason=str(error))
        yield
        return
    try:
        yield
    finally:
        lock.release()


def _write(policy: ExportablePolicy, state: dict[str, Tensor], directory: Path) -> None:
    """The model (LoRA merged) and, under LoRA, the adapter in ``directory/adapter``: one
    directory, so both are in place or neither."""
    policy.export_hf(directory, state=state)
    if policy.uses_lora:
        policy.export_adapter(directory / "adapter", state=state)


def _write_failure(out: Path, error: OSError, needed: int) -> str:
    return (
        f"cannot write the exported model to {out} ({write_failure_advice(out, error, needed)});"
        " nothing half-written was left there and the run directory is untouched; then run "
        "the same command again"
    )


def _chosen_step(steps: list[int], step: int | None, run_dir: Path) -> int:
    if not steps:
        raise FileNotFoundError(f"{run_dir} has no checkpoint that every rank saved")
    if step is None:
        return steps[-1]
    if step not in steps:
        raise FileNotFoundError(
            f"{run_dir} has no checkpoint of step {step}; steps: {', '.join(map(str, steps))}"
        )
    return step


def _strategy_state(state: dict[str, Any], where: Path) -> dict[str, Any]:
    for key in STRATEGY_KEYS:
        if key in state:
            return state[key]  # type: ignore[no-any-return]
    raise ValueError(f"{where} holds no policy state (keys: {', '.join(sorted(state))})")


def _complete(state: dict[str, Tensor], module: nn.Module) -> dict[str, Tensor]:
    """``state`` with the module's frozen parameters it left out (they did not train);
    a missing trainable parameter is an error."""
    own = module.state_dict(keep_vars=True)
    missing = [name for name in own if name not in state]
    trained = [name for name in missing if own[name].requires_grad]
    if trained:
        raise ValueError(f"the checkpoint lacks trained parameters: {', '.join(trained[:5])}")
    return {**{name: own[name].detach() for name in missing}, **state}
