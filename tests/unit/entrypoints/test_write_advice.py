"""Advice when a model directory cannot be written (issue 46: a full disk during
``checkpoints export`` or a final export said "free some space", whatever the path and
the model): the filesystem, the space the model needs and the space free there."""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import NamedTuple

import pytest
import torch

from lightrft.entrypoints.next_command import NextCommand
from lightrft.entrypoints.run_dir import write_advice
from lightrft.entrypoints.run_dir.final_export import ExportFailedError, KeptState, write_final
from lightrft.entrypoints.run_dir.write_advice import (
    mount_point,
    size_text,
    state_bytes,
    write_failure_advice,
)


class _Usage(NamedTuple):
    total: int
    used: int
    free: int


def _free(monkeypatch: pytest.MonkeyPatch, free: int) -> None:
    monkeypatch.setattr(
        write_advice.shutil, "disk_usage", lambda _path: _Usage(2 * free, free, free)
    )


def test_sizes_and_state_bytes() -> None:
    assert [size_text(n) for n in (300 * 2**10, 12 * 2**20, 3 * 2**29)] == [
        "300 KiB",
        "12.0 MiB",
        "1.5 GiB",
    ]
    state = {"a": torch.zeros(4, 8), "b": torch.zeros(10, dtype=torch.bfloat16), "n": 3}
    assert state_bytes(state) == 4 * 8 * 4 + 10 * 2


def test_the_mount_point_holds_the_path_and_is_a_mount() -> None:
    here = Path(__file__).resolve().parent
    mount = mount_point(here)
    assert os.path.ismount(mount) and (mount == here or mount in here.parents)


def test_a_full_disk_says_how_much_the_model_needs_and_how_much_more_to_free(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _free(monkeypatch, 100 * 2**20)
    error = OSError(errno.ENOSPC, "No space left on device")
    advice = write_failure_advice(tmp_path / "out" / "model", error, 2**30)
    mount = mount_point(tmp_path)
    on = str(mount) if mount == tmp_path else f"{mount} (the filesystem of {tmp_path})"
    assert advice == (
        f"No space left on device; the model needs about 1.0 GiB and {on} has 100.0 MiB "
        "free: free at least 924.0 MiB more there, or choose a directory on a filesystem "
        "with 1.0 GiB free"
    )


def test_safetensors_text_without_an_errno_is_still_a_full_disk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _free(monkeypatch, 2**20)
    error = OSError("Error while serializing: I/O error: No space left on device (os error 28)")
    advice = write_failure_advice(tmp_path / "m", error, 3 * 2**20)
    assert "the model needs about 3.0 MiB" in advice and "free at least 2.0 MiB more" in advice


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        (errno.EDQUOT, "your disk quota on"),
        (errno.EROFS, "is mounted read-only; choose a directory on a writable filesystem"),
        (errno.EACCES, "no permission to write in"),
    ],
)
def test_quota_read_only_and_permission_get_their_own_advice(
    tmp_path: Path, code: int, expected: str
) -> None:
    advice = write_failure_advice(tmp_path / "m", OSError(code, os.strerror(code)), 2**20)
    assert advice.startswith(os.strerror(code)) and expected in advice


def test_the_final_export_names_the_space_its_state_needs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _free(monkeypatch, 2**10)
    state = {"w": torch.zeros(2**18)}  # 1 MiB of float32

    def full(directory: Path) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    kept = KeptState(3, 3, 3, tmp_path / "checkpoints")
    command = NextCommand(("sft", "--run-dir", "r"))
    with pytest.raises(ExportFailedError) as info:
        write_final(tmp_path / "final_model", full, kept, command, state=state)
    message = str(info.value)
    assert "the model needs about 1.0 MiB" in message and "has 1 KiB free" in message
    assert "free at least 1023 KiB more there" in message
    assert message.endswith("then run: lightrft sft --run-dir r --resume")
