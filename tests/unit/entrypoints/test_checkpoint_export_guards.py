"""`lightrft checkpoints export` at its edges (EDGE_CASES EX07-EX11, EX08): a damaged
checkpoint is refused naming the file, an --out that is a run directory, inside or holding
one, or not empty is refused (--force moves it aside), a run in progress (its lock held)
is not read, a full disk ends in one line.

The run directory is made by hand (a config on the tiny model and one checkpoint of a
policy state with a known weight), so no training runs.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from safetensors import SafetensorError
from safetensors.torch import load_file

from lightrft.adapters.checkpoint import LocalCheckpointStore
from lightrft.domain.checkpoint_health import DamagedCheckpointError
from lightrft.entrypoints.cli import main
from lightrft.entrypoints.jobs.checkpoint_export import ExportWriteError, export_checkpoint
from lightrft.entrypoints.roots.checkpoint_export import CheckpointExportRoot
from lightrft.entrypoints.run_dir.directory import RunDirectoryError, RunDirectoryLock

MARK = 0.75  # the value the checkpoint gives the first embedding weight
EMBED = "model.embed_tokens.weight"


@pytest.fixture
def run(tiny_dir: Path, tmp_path: Path) -> Path:
    """A run directory with a config on the tiny model and a checkpoint of step 3."""
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "config.yaml").write_text(f"model:\n  path: {tiny_dir}\n", encoding="utf-8")
    (run_dir / "history.jsonl").write_text('{"event": "start", "step": 0}\n', encoding="utf-8")
    (run_dir / "metrics.jsonl").write_text('{"step": 1}\n', encoding="utf-8")
    module = CheckpointExportRoot(run_dir / "config.yaml").policy().module
    state = {k: v.detach().clone() for k, v in module.state_dict().items()}
    state[EMBED][0, 0] = MARK
    store = LocalCheckpointStore(run_dir / "checkpoints", keep_last=None)
    store.save(3, {"policy_strategy": {"module": state}})
    return run_dir


def _exported_mark(out: Path) -> float:
    return float(load_file(str(out / "model.safetensors"))[EMBED][0, 0])


def test_an_intact_checkpoint_exports_its_weights(run: Path, tmp_path: Path) -> None:
    done = export_checkpoint(run, tmp_path / "out")
    assert done.step == 3 and _exported_mark(tmp_path / "out") == MARK


def test_a_checkpoint_failing_its_checksum_is_refused_naming_the_file(
    run: Path, tmp_path: Path
) -> None:
    """EX07: one flipped bit in state.pt used to export with exit 0 and a wrong weight."""
    state = run / "checkpoints" / "step_00000003" / "state.pt"
    data = bytearray(state.read_bytes())
    data[len(data) // 2] ^= 0x40
    state.write_bytes(bytes(data))
    with pytest.raises(DamagedCheckpointError, match="checksum differs") as info:
        export_checkpoint(run, tmp_path / "out")
    assert str(state) in str(info.value)
    assert not (tmp_path / "out").exists()


def test_a_non_empty_out_is_refused_and_force_moves_it_aside(run: Path, tmp_path: Path) -> None:
    """EX09: whatever --out held used to be deleted without a word."""
    out = tmp_path / "exp2"
    out.mkdir()
    (out / "important.txt").write_text("keep")
    with pytest.raises(RunDirectoryError, match="is not empty.*--force"):
        export_checkpoint(run, out)
    assert (out / "important.txt").read_text() == "keep"
    export_checkpoint(run, out, force=True)
    assert _exported_mark(out) == MARK
    (aside,) = tmp_path.glob("exp2.old-*")
    assert (aside / "important.txt").read_text() == "keep"
    export_checkpoint(run, tmp_path / "empty_ok", step=3)  # an empty or new --out is fine


@pytest.mark.parametrize("where", ["run", "run/export", "parent", "other_run/sub"])
def test_an_out_that_is_in_or_holds_a_run_directory_is_refused(
    run: Path, tmp_path: Path, where: str
) -> None:
    """EX10: --out RUN replaced the run directory (config, metrics, checkpoints)."""
    other = tmp_path / "other_run"
    other.mkdir()
    (other / ".lightrft.lock").touch()
    out = tmp_path if where == "parent" else tmp_path / where
    before = sorted(p.name for p in run.iterdir())
    with pytest.raises(RunDirectoryError, match="run directory"):
        export_checkpoint(run, out, force=True)
    assert sorted(p.name for p in run.iterdir()) == before
    assert (run / "checkpoints" / "step_00000003" / "state.pt").is_file()


def test_a_run_holding_its_lock_is_not_exported(run: Path, tmp_path: Path) -> None:
    """EX11: the export ignored the lock of a run that was training."""
    with RunDirectoryLock(run), pytest.raises(RunDirectoryError, match="in use"):
        export_checkpoint(run, tmp_path / "out")
    assert not (tmp_path / "out").exists()
    export_checkpoint(run, tmp_path / "out")  # the lock is released after an export


def test_a_full_disk_ends_in_one_line(
    run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """EX08: safetensors reports a full disk as SafetensorError (not an OSError): a
    traceback."""

    def full(*_args: object, **_kwargs: object) -> None:
        raise SafetensorError("Error while serializing: I/O error: No space left on device")

    monkeypatch.setattr("transformers.modeling_utils.safe_save_file", full)
    with pytest.raises(ExportWriteError, match="No space left") as info:
        export_checkpoint(run, tmp_path / "out")
    assert "\n" not in str(info.value) and "run the same command again" in str(info.value)
    assert "the model needs about" in str(info.value) and " free" in str(info.value)
    assert not (tmp_path / "out").exists() and not list(tmp_path.glob(".out.tmp-*"))
    code = main(["checkpoints", "export", str(run), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 1 and "Traceback" not in err, err
    (line,) = [line for line in err.splitlines() if line.startswith("lightrft: error:")]
    assert line.startswith("lightrft: error: cannot write the exported model")
