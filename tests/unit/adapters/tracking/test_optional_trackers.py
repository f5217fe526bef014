"""TensorBoard and W&B trackers, MultiTracker and make_tracker."""

from __future__ import annotations

import sys
import types
from pathlib import Path
from typing import Any

import pytest

from lightrft.adapters.fakes.tracker import InMemoryTracker
from lightrft.adapters.tracking import (
    JsonlTracker,
    MultiTracker,
    TensorBoardTracker,
    WandbTracker,
    make_tracker,
)
from lightrft.adapters.tracking import optional_import as optional_import_module
from lightrft.domain.ports import Tracker

HINT = "pip install 'lightrft[tracking]'"


def _read_tensorboard(log_dir: Path) -> Any:
    accumulator = pytest.importorskip(
        "tensorboard.backend.event_processing.event_accumulator"
    ).EventAccumulator(str(log_dir))
    accumulator.Reload()
    return accumulator


def test_tensorboard_tracker_writes_scalars_and_samples(tmp_path: Path) -> None:
    pytest.importorskip("tensorboard")
    tracker = TensorBoardTracker(tmp_path / "tb")
    assert isinstance(tracker, Tracker)
    tracker.log_metrics({"reward/mean": 0.5, "kl/mean": 0.125}, step=1)
    tracker.log_metrics({"reward/mean": 0.75}, step=2)
    tracker.log_samples([{"response": "<script>x</script>", "reward": 1.0}], step=2)
    tracker.close()
    tracker.close()
    events = _read_tensorboard(tmp_path / "tb")
    assert [(e.step, e.value) for e in events.Scalars("reward/mean")] == [(1, 0.5), (2, 0.75)]
    assert [(e.step, e.value) for e in events.Scalars("kl/mean")] == [(1, 0.125)]
    (text_event,) = events.Tensors("samples/text_summary")
    text = text_event.tensor_proto.string_val[0].decode()
    assert text_event.step == 2
    assert text == '    {"response": "<script>x</script>", "reward": 1.0}'  # a code block
    with pytest.raises(RuntimeError, match="after close"):
        tracker.log_metrics({"a": 1.0}, 3)


def _hide_module(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    real = optional_import_module.importlib.import_module

    def fake_import(module: str) -> types.ModuleType:
        if module.split(".")[0] == name:
            raise ModuleNotFoundError(f"No module named {name!r}")
        return real(module)

    monkeypatch.setattr(optional_import_module.importlib, "import_module", fake_import)


def test_missing_wandb_gives_the_install_hint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "wandb", None)  # makes `import wandb` fail
    with pytest.raises(ImportError) as info:
        WandbTracker(tmp_path)
    assert "'wandb'" in str(info.value) and HINT in str(info.value)
    assert "WandbTracker" in str(info.value)


def test_missing_tensorboard_gives_the_install_hint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _hide_module(monkeypatch, "tensorboard")
    with pytest.raises(ImportError, match=r"TensorBoardTracker needs the 'tensorboard'") as info:
        TensorBoardTracker(tmp_path)
    assert HINT in str(info.value)


class _StubRun:
    def __init__(self) -> None:
        self.logged: list[tuple[dict[str, Any], int]] = []
        self.finished = 0

    def log(self, data: dict[str, Any], step: int) -> None:
        self.logged.append((data, step))

    def finish(self) -> None:
        self.finished += 1


def _stub_wandb(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    """A stand-in ``wandb`` module that records what the tracker asked of it."""
    stub = types.ModuleType("wandb")
    stub.inits = []  # type: ignore[attr-defined]

    def init(**kwargs: Any) -> _StubRun:
        stub.inits.append(kwargs)  # type: ignore[attr-defined]
        stub.run = _StubRun()  # type: ignore[attr-defined]
        return stub.run  # type: ignore[attr-defined]

    class Table:
        def __init__(self, columns: list[str], data: list[list[Any]]) -> None:
            self.columns, self.data = columns, data

    stub.init = init  # type: ignore[attr-defined]
    stub.Table = Table  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "wandb", stub)
    return stub


def test_wandb_tracker_maps_calls_onto_the_wandb_api(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stub = _stub_wandb(monkeypatch)
    tracker = WandbTracker(tmp_path, project="grpo", config={"lr": 1e-6})
    assert stub.inits == [{"dir": str(tmp_path), "project": "grpo", "config": {"lr": 1e-6}}]
    # no "mode" passed: wandb reads WANDB_MODE=offline from the environment itself
    tracker.log_metrics({"reward/mean": 0.5}, step=3)
    tracker.log_samples([{"prompt": "p", "reward": 1.0}, {"prompt": "q", "extra": 2}], step=3)
    tracker.close()
    tracker.close()
    run = stub.run
    assert run.logged[0] == ({"reward/mean": 0.5}, 3)
    table, step = run.logged[1][0]["samples"], run.logged[1][1]
    assert step == 3 and table.columns == ["prompt", "reward", "extra"]
    assert table.data == [["p", 1.0, None], ["q", None, 2]]
    assert run.finished == 1

    WandbTracker(tmp_path, mode="offline", name="r1")
    assert stub.inits[-1] == {"dir": str(tmp_path), "name": "r1", "mode": "offline"}


class _BrokenClose(InMemoryTracker):
    def close(self) -> None:
        super().close()
        raise OSError("flush failed")


def test_multi_tracker_fans_out_and_closes_everything() -> None:
    a, b, c = InMemoryTracker(), _BrokenClose(), InMemoryTracker()
    multi = MultiTracker([a, b, c])
    assert isinstance(multi, Tracker)
    multi.log_metrics({"x": 1.0}, 1)
    multi.log_samples([{"r": 2}], 1)
    for tracker in (a, b, c):
        assert tracker.metrics == [(1, {"x": 1.0})] and tracker.samples == [(1, [{"r": 2}])]
    with pytest.raises(OSError, match="flush failed"):
        multi.close()
    assert a.closed and b.closed and c.closed


def test_make_tracker_builds_by_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    single = make_tracker(["jsonl"], tmp_path)
    assert isinstance(single, JsonlTracker) and single.run_dir == tmp_path
    single.close()

    pytest.importorskip("tensorboard")
    stub = _stub_wandb(monkeypatch)
    multi = make_tracker(["jsonl", "tensorboard", "wandb"], tmp_path, wandb={"project": "p"})
    assert isinstance(multi, MultiTracker)
    assert [type(t) for t in multi.trackers] == [JsonlTracker, TensorBoardTracker, WandbTracker]
    assert stub.inits[-1]["project"] == "p"
    multi.log_metrics({"m": 1.0}, 1)
    multi.close()
    assert (tmp_path / "metrics.jsonl").is_file()
    assert any((tmp_path / "tensorboard").iterdir())


def test_make_tracker_refuses_bad_names_and_options(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="valid choices: jsonl, tensorboard, wandb"):
        make_tracker(["jsonl", "mlflow"], tmp_path)
    with pytest.raises(ValueError, match="repeat"):
        make_tracker(["jsonl", "jsonl"], tmp_path)
    with pytest.raises(ValueError, match="not enabled"):
        make_tracker(["jsonl"], tmp_path, wandb={"project": "p"})
