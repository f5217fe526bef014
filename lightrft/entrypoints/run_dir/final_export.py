"""The final export of every verb (``train``, ``demo``, ``sft``, ``rm train``): nothing lost.

1. :meth:`FinalState.secure` (every rank): unless a checkpoint of the final step exists,
   one is saved first (also without ``checkpoint.every``), so a failed export loses no
   training. If that save fails too, the export is still tried.
2. :func:`write_final` (the writing rank): the model goes to a temporary sibling directory
   that is renamed over the target (:func:`replace_directory`), so the target is complete
   or as it was. An ``OSError`` (a full disk) becomes :class:`ExportFailedError`: one
   message with the cause and advice for that path (:mod:`write_advice`: the filesystem,
   the space the model needs and the space free), the checkpoint that holds the trained
   state (only one that exists), and the command to run next.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import structlog

from lightrft.adapters.checkpoint import CheckpointWriteError
from lightrft.adapters.checkpoint.directory_swap import replace_directory
from lightrft.domain.ports import CheckpointStore
from lightrft.entrypoints.next_command import NextCommand
from lightrft.entrypoints.run_dir.write_advice import state_bytes, write_failure_advice

log = structlog.get_logger(__name__)


class ExportFailedError(OSError):
    """Writing the final model failed; the message says what is kept and what to run.

    An ``OSError`` without an ``errno`` (the message is the whole story): exit status 1.
    """


@dataclass(frozen=True)
class KeptState:
    """Which checkpoint holds the trained state before the export.

    ``step``: the checkpoint of the final step (``None``: it could not be written);
    ``newest``: the newest checkpoint there is; ``where``: the checkpoints directory.
    """

    step: int | None
    newest: int | None
    final_step: int
    where: Path


@dataclass(frozen=True)
class FinalState:
    """The trainer's final state and how to checkpoint it.

    ``save`` writes the checkpoint of ``step`` through ``store`` (on every rank);
    ``where`` is the checkpoints directory (for the message).
    """

    store: CheckpointStore
    step: int
    save: Callable[[], None]
    where: Path

    def secure(self) -> KeptState:
        """Saves the final state unless its checkpoint exists; says what is kept."""
        if self.step in self.store.steps():
            return self._kept(self.step)
        try:
            self.save()
        except CheckpointWriteError as error:
            log.warning("export.final_checkpoint_failed", step=self.step, error=error.strerror)
            return self._kept(None)
        log.info("export.final_checkpoint_saved", step=self.step)
        return self._kept(self.step)

    def _kept(self, step: int | None) -> KeptState:
        return KeptState(step, self.store.latest_step(), self.step, self.where)


def write_final(
    target: Path,
    write: Callable[[Path], object],
    kept: KeptState,
    next_command: NextCommand,
    *,
    state: Mapping[str, Any] | None = None,
) -> Path:
    """``write(directory)`` into ``target`` atomically; raises :class:`ExportFailedError`
    (the cause with advice for that path, what is kept, what to run) when the writing fails
    with an ``OSError``. ``state``: the tensors written (for the space the model needs)."""
    try:
        replace_directory(target, write)
    except OSError as error:
        needed = state_bytes(state) if state is not None else None
        raise ExportFailedError(_failure(target, error, needed, kept, next_command)) from error
    log.info("export.done", directory=str(target))
    return target


def _failure(
    target: Path, error: OSError, needed: int | None, kept: KeptState, next_command: NextCommand
) -> str:
    head = (
        f"cannot write the final model to {target} "
        f"({write_failure_advice(target, error, needed)}); nothing half-written was left there"
    )
    if kept.step is not None:
        return (
            f"{head}. The trained state is kept in the checkpoint of step {kept.step} in "
            f"{kept.where}. Fix the cause, then run: {next_command.resume()}"
        )
    if kept.newest is not None:
        return (
            f"{head}, and the checkpoint of the final step {kept.final_step} could not be "
            f"written either. The newest checkpoint is step {kept.newest} in {kept.where}: fix "
            f"the cause, then run {next_command.resume()} (it trains the steps after "
            f"{kept.newest} again)"
        )
    return (
        f"{head}, and no checkpoint could be written either: there is none, so this run's "
        f"training is lost. Fix the cause, then start again: {next_command.start_over()}"
    )
