"""The final export: complete or absent, the final state checkpointed first, an honest message."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest
import torch

from lightrft.adapters.checkpoint import CheckpointWriteError, LocalCheckpointStore
from lightrft.adapters.checkpoint.directory_swap import replace_directory
from lightrft.entrypoints.next_command import NextCommand
from lightrft.entrypoints.run_dir.final_export import (
    ExportFailedError,
    FinalState,
    KeptState,
    write_final,
)

NEXT = NextCommand(("train", "grpo", "--run-dir", "r"))


def _config_then_full_disk(directory: Path) -> None:
    """Like ``save_pretrained`` on a full disk: the config lands, the weights do not."""
    (directory / "config.json").write_text("{}")
    raise OSError(errno.ENOSPC, "No space left on device")


def _model(directory: Path, weights: bytes) -> None:
    (directory / "config.json").write_text("{}")
    (directory / "model.safetensors").write_bytes(weights)


def _entries(parent: Path) -> list[str]:
    return sorted(p.name for p in parent.iterdir())


def test_a_failed_write_leaves_no_target_and_no_temporary_directory(tmp_path: Path) -> None:
    with pytest.raises(OSError, match="No space left"):
        replace_directory(tmp_path / "final_model", _config_then_full_disk)
    assert _entries(tmp_path) == []


def test_a_failed_rewrite_leaves_the_previous_export_whole(tmp_path: Path) -> None:
    target = replace_directory(tmp_path / "final_model", lambda d: _model(d, b"old"))
    with pytest.raises(OSError):
        replace_directory(target, _config_then_full_disk)
    assert _entries(tmp_path) == ["final_model"]
    assert (target / "model.safetensors").read_bytes() == b"old"
    replace_directory(target, lambda d: _model(d, b"new"))
    assert _entries(tmp_path) == ["final_model"]
    assert (target / "model.safetensors").read_bytes() == b"new"


def test_a_leftover_of_a_killed_export_is_removed(tmp_path: Path) -> None:
    (tmp_path / ".final_model.tmp-dead").mkdir()
    replace_directory(tmp_path / "final_model", lambda d: _model(d, b"w"))
    assert _entries(tmp_path) == ["final_model"]


class _Trainer:
    """A trainer at ``step`` whose checkpoint saves go to ``store``."""

    def __init__(self, store: LocalCheckpointStore, step: int) -> None:
        self.store, self.step, self.saves = store, step, 0

    def save_checkpoint(self) -> None:
        self.saves += 1
        self.store.save(self.step, {"step": self.step, "w": torch.ones(2)})


def _final(tmp_path: Path, step: int, steps: tuple[int, ...] = ()) -> tuple[FinalState, _Trainer]:
    store = LocalCheckpointStore(tmp_path / "checkpoints")
    for saved in steps:
        store.save(saved, {"step": saved})
    trainer = _Trainer(store, step)
    return FinalState(store, step, trainer.save_checkpoint, store.root), trainer


def test_the_final_state_is_checkpointed_once_before_the_export(tmp_path: Path) -> None:
    final, trainer = _final(tmp_path, 10)
    assert final.secure() == KeptState(10, 10, 10, tmp_path / "checkpoints")
    assert trainer.saves == 1
    assert final.secure().step == 10 and trainer.saves == 1  # there is one now: not again


def test_a_failed_export_names_the_checkpoint_and_the_resume_command(tmp_path: Path) -> None:
    final, _ = _final(tmp_path, 10, steps=(5,))
    kept = final.secure()
    with pytest.raises(ExportFailedError) as info:
        write_final(tmp_path / "final_model", _config_then_full_disk, kept, NEXT)
    message = str(info.value)
    assert info.value.errno is None  # the message is the whole story
    assert f"cannot write the final model to {tmp_path / 'final_model'}" in message
    assert "No space left on device" in message and " free on /" in message
    assert f"checkpoint of step 10 in {tmp_path / 'checkpoints'}" in message
    assert message.endswith("run: lightrft train grpo --run-dir r --resume")
    assert not (tmp_path / "final_model").exists()


def _failing_save() -> None:
    raise CheckpointWriteError(errno.ENOSPC, "cannot write the checkpoint of step 10")


def test_when_the_final_checkpoint_fails_too_the_message_claims_only_what_exists(
    tmp_path: Path,
) -> None:
    store = LocalCheckpointStore(tmp_path / "checkpoints")
    store.save(5, {"step": 5})
    kept = FinalState(store, 10, _failing_save, store.root).secure()
    assert kept == KeptState(None, 5, 10, store.root)
    with pytest.raises(ExportFailedError) as info:
        write_final(tmp_path / "final_model", _config_then_full_disk, kept, NEXT)
    message = str(info.value)
    assert "the checkpoint of the final step 10 could not be written either" in message
    assert "The newest checkpoint is step 5" in message and "--resume" in message

    empty = LocalCheckpointStore(tmp_path / "none")
    kept = FinalState(empty, 10, _failing_save, empty.root).secure()
    with pytest.raises(ExportFailedError) as info:
        write_final(tmp_path / "final_model", _config_then_full_disk, kept, NEXT)
    message = str(info.value)
    assert "there is none, so this run's training is lost" in message
    assert message.endswith("start again: lightrft train grpo --run-dir r --overwrite")
    assert "checkpoint of step" not in message and "kept in" not in message


def test_a_full_disk_elsewhere_claims_no_checkpoint() -> None:
    from lightrft.entrypoints.user_errors import describe

    text = describe(OSError(errno.ENOSPC, "No space left on device", "runs/a/metrics.jsonl"))
    assert "writing runs/a/metrics.jsonl" in text and "checkpoints verify" in text
    assert "intact" not in text  # there may be none


def _safetensors_full_disk(directory: Path) -> None:
    """``save_pretrained`` on a full disk: safetensors raises its own error, not OSError."""
    from safetensors import SafetensorError

    (directory / "config.json").write_text("{}")
    raise SafetensorError(
        "Error while serializing: I/O error: No space left on device (os error 28)"
    )


def test_a_safetensors_full_disk_is_the_same_one_message(tmp_path: Path) -> None:
    """EDGE_CASES RD17 / F14b: SafetensorError is not an OSError; it escaped as a traceback."""
    final, _ = _final(tmp_path, 10, steps=(5,))
    with pytest.raises(ExportFailedError) as info:
        write_final(tmp_path / "final_model", _safetensors_full_disk, final.secure(), NEXT)
    message = str(info.value)
    assert "No space left on device" in message and "\n" not in message
    assert message.endswith("run: lightrft train grpo --run-dir r --resume")
    assert _entries(tmp_path) == ["checkpoints"]  # nothing half-written, no temporary left


def test_a_failed_first_checkpoint_does_not_advise_resume(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """RD17: with no checkpoint at all, "run the same command with --resume" was refused
    ("nothing to resume")."""

    def full(*_args: object, **_kwargs: object) -> None:
        raise RuntimeError("[enforce fail] write: No space left on device")

    monkeypatch.setattr(torch, "save", full)
    store = LocalCheckpointStore(tmp_path / "checkpoints")
    with pytest.raises(CheckpointWriteError) as info:
        store.save(3, {"step": 3})
    message = str(info.value.strerror)
    assert "nothing to resume" in message and message.endswith(
        "with --resume=auto (it starts over)"
    )
    store_with_one = LocalCheckpointStore(tmp_path / "other")
    monkeypatch.undo()
    store_with_one.save(1, {"step": 1})
    monkeypatch.setattr(torch, "save", full)
    with pytest.raises(CheckpointWriteError) as info:
        store_with_one.save(2, {"step": 2})
    assert str(info.value.strerror).endswith("then run the same command with --resume")
