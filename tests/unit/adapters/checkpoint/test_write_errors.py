"""A full disk reported by safetensors (``SafetensorError``, not an ``OSError``) inside a
checkpoint's extra writer is a checkpoint write error, and its one line advises ``--resume``
only when there is a checkpoint to resume (EC RD17: 'Earlier checkpoints are intact (there
are none yet) ... run the same command with --resume'). The final export and
``checkpoints export`` are tested in test_final_export.py and test_checkpoint_export_guards.py.
"""

from __future__ import annotations

import errno
from pathlib import Path

import pytest
import torch
from safetensors import SafetensorError

from lightrft.adapters.checkpoint import CheckpointWriteError, LocalCheckpointStore
from lightrft.entrypoints.user_errors import describe, is_user_error

FULL = "Error while serializing: I/O error: No space left on device (os error 28)"


def _full_disk(directory: Path) -> None:
    (directory / "adapter_config.json").write_text("{}")
    raise SafetensorError(FULL)


def test_a_full_disk_in_an_extra_writer_is_a_checkpoint_write_error(tmp_path: Path) -> None:
    store = LocalCheckpointStore(tmp_path / "checkpoints")
    with pytest.raises(CheckpointWriteError) as info:
        store.save(3, {"w": torch.zeros(2)}, extra_writer=_full_disk)
    assert info.value.errno == errno.ENOSPC and store.steps() == []
    assert sorted(p.name for p in store.root.iterdir()) == []  # no temporary directory left
    assert is_user_error(info.value) and "\n" not in describe(info.value)
    text = describe(info.value)
    assert "nothing to resume" in text and "with --resume\n" not in text + "\n"
    store.save(3, {"w": torch.zeros(2)})
    with pytest.raises(CheckpointWriteError) as info:
        store.save(4, {"w": torch.zeros(2)}, extra_writer=_full_disk)
    assert "newest: step 3" in str(info.value) and str(info.value).endswith("with --resume")
