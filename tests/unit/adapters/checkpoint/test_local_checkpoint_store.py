"""LocalCheckpointStore: bitwise round trips, pruning, crash safety, refusal of unsafe state."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from collections import OrderedDict
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from torch import nn

from lightrft.adapters.checkpoint import (
    CheckpointNotFoundError,
    LocalCheckpointStore,
    UnsafeCheckpointStateError,
)
from lightrft.adapters.checkpoint import local_store as local_store_module
from lightrft.domain.checkpoint_health import DamagedCheckpointError
from lightrft.domain.ports import CheckpointStore


def _bits(t: torch.Tensor) -> torch.Tensor:
    """The raw bytes of ``t`` (so NaN == NaN and -0.0 != 0.0)."""
    return t.detach().contiguous().reshape(-1).view(torch.uint8)


def assert_bitwise_equal(a: Any, b: Any, path: str = "state") -> None:
    """Same container types, same keys, tensors with equal dtype, shape and bytes."""
    assert type(a) is type(b), f"{path}: {type(a)} vs {type(b)}"
    if isinstance(a, torch.Tensor):
        assert a.dtype == b.dtype and a.shape == b.shape, path
        assert torch.equal(_bits(a), _bits(b)), path
    elif isinstance(a, dict):
        assert list(a) == list(b), path
        for key in a:
            assert_bitwise_equal(a[key], b[key], f"{path}[{key!r}]")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_bitwise_equal(x, y, f"{path}[{i}]")
    else:
        assert a == b, path


def _trained_state() -> tuple[dict[str, Any], nn.Module, torch.optim.Optimizer]:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 2))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2, betas=(0.9, 0.95))
    model(torch.randn(5, 3)).square().sum().backward()
    opt.step()
    state = {
        "step": 7,
        "kl": {"type": "FixedKlController", "coef": 0.05},
        "policy_strategy": {"module": model.state_dict(), "optimizer": opt.state_dict()},
        "torch_rng": torch.get_rng_state(),
        "odd_tensors": [
            torch.tensor([float("nan"), -0.0, float("inf")]),
            torch.arange(6.0).view(2, 3)[:, 1],  # non-contiguous view
            torch.ones(2, dtype=torch.bfloat16),
            torch.tensor(3),  # 0-d
        ],
        "misc": ("text", None, True, 2.5, b"raw", {0: [1, 2]}, torch.Size([2, 3])),
    }
    return state, model, opt


def test_round_trip_is_bitwise_and_the_store_is_a_checkpoint_store(tmp_path: Path) -> None:
    store = LocalCheckpointStore(tmp_path / "ckpt")
    assert isinstance(store, CheckpointStore)
    assert store.latest_step() is None
    state, _, _ = _trained_state()
    store.save(7, state)
    assert store.latest_step() == 7
    loaded = store.load(7)
    assert_bitwise_equal(state, loaded)
    # the model state keeps its OrderedDict type (load_state_dict needs nothing else)
    assert type(loaded["policy_strategy"]["module"]) is OrderedDict


def test_restored_optimizer_and_rng_continue_exactly_like_the_original(tmp_path: Path) -> None:
    state, model, opt = _trained_state()
    store = LocalCheckpointStore(tmp_path)
    store.save(1, state)
    expected_noise = torch.rand(4)  # what the original RNG produces next
    x = torch.randn(5, 3)

    twin = nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 2))
    twin_opt = torch.optim.AdamW(twin.parameters(), lr=1.0)
    loaded = store.load(1)
    twin.load_state_dict(loaded["policy_strategy"]["module"])
    twin_opt.load_state_dict(loaded["policy_strategy"]["optimizer"])
    torch.set_rng_state(loaded["torch_rng"])
    assert torch.equal(torch.rand(4), expected_noise)

    for m, o in ((model, opt), (twin, twin_opt)):  # one more identical step on both
        o.zero_grad()
        m(x).square().sum().backward()
        o.step()
    for p, q in zip(model.parameters(), twin.parameters(), strict=True):
        assert torch.equal(p, q)


def test_metadata_and_directory_layout(tmp_path: Path) -> None:
    store = LocalCheckpointStore(tmp_path)
    before = time.time()
    store.save(12, {"x": torch.zeros(1)})
    after = time.time()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["step_00000012"]
    assert sorted(p.name for p in store.directory(12).iterdir()) == ["metadata.json", "state.pt"]
    meta = json.loads((store.directory(12) / "metadata.json").read_text())
    assert meta["step"] == 12 and before <= meta["time"] <= after
    assert meta["lightrft_version"] and meta["has_extra"] is False
    assert store.metadata(12) == meta


def test_extra_writer_files_land_in_the_committed_checkpoint(tmp_path: Path) -> None:
    seen: list[Path] = []

    def write_shards(path: Path) -> None:
        seen.append(path)
        assert path.is_dir() and not any(path.iterdir())
        assert path.parent.name.startswith(".tmp-step_00000003-")  # inside the temp dir
        (path / "rank0.distcp").write_bytes(b"shard-0")
        (path / "sub").mkdir()
        (path / "sub" / "rank1.distcp").write_bytes(b"shard-1")

    store = LocalCheckpointStore(tmp_path)
    store.save(3, {"step": 3}, extra_writer=write_shards)
    extra = store.extra_directory(3)
    assert extra == tmp_path / "step_00000003" / "extra"
    assert (extra / "rank0.distcp").read_bytes() == b"shard-0"
    assert (extra / "sub" / "rank1.distcp").read_bytes() == b"shard-1"
    assert not seen[0].exists()  # the temp dir was renamed away
    assert store.metadata(3)["has_extra"] is True
    store.save(4, {"step": 4})
    with pytest.raises(CheckpointNotFoundError, match="without an extra_writer"):
        store.extra_directory(4)


def test_keep_last_prunes_the_oldest_complete_checkpoints(tmp_path: Path) -> None:
    store = LocalCheckpointStore(tmp_path, keep_last=2)
    for step in range(1, 6):
        store.save(step, {"step": step})
    assert store.steps() == [4, 5]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["step_00000004", "step_00000005"]
    assert store.load(4) == {"step": 4}

    keep_all = LocalCheckpointStore(tmp_path / "all", keep_last=None)
    for step in (10, 20, 30):
        keep_all.save(step, {"step": step})
    assert keep_all.steps() == [10, 20, 30]
    with pytest.raises(ValueError, match="keep_last"):
        LocalCheckpointStore(tmp_path, keep_last=0)


def test_the_checkpoint_just_saved_is_never_pruned(tmp_path: Path) -> None:
    store = LocalCheckpointStore(tmp_path, keep_last=2)
    for step in (10, 20):
        store.save(step, {"step": step})
    store.save(5, {"step": 5})  # an older step saved late (a run restarted from earlier)
    assert store.steps() == [5, 20]


def test_saving_a_step_again_replaces_it(tmp_path: Path) -> None:
    store = LocalCheckpointStore(tmp_path)
    store.save(2, {"v": torch.tensor([1.0])})
    store.save(2, {"v": torch.tensor([2.0])})
    assert torch.equal(store.load(2)["v"], torch.tensor([2.0]))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["step_00000002"]


def test_failing_extra_writer_leaves_the_previous_checkpoint_latest(tmp_path: Path) -> None:
    store = LocalCheckpointStore(tmp_path, keep_last=1)
    store.save(1, {"step": 1})

    def broken_writer(path: Path) -> None:
        (path / "half.bin").write_bytes(b"x")
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        store.save(2, {"step": 2}, extra_writer=broken_writer)
    assert store.latest_step() == 1
    assert store.load(1) == {"step": 1}  # keep_last=1 did not prune: no successful save
    assert sorted(p.name for p in tmp_path.iterdir()) == ["step_00000001"]


def test_failing_rename_leaves_the_previous_checkpoint_latest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = LocalCheckpointStore(tmp_path, keep_last=1)
    store.save(1, {"step": 1})

    def no_rename(src: Any, dst: Any) -> None:
        raise OSError("power cut")

    monkeypatch.setattr(local_store_module.os, "rename", no_rename)
    with pytest.raises(OSError, match="power cut"):
        store.save(2, {"step": 2})
    monkeypatch.undo()
    assert store.latest_step() == 1 and store.steps() == [1]
    assert store.load(1) == {"step": 1}


def test_a_killed_save_leaves_a_leftover_that_is_ignored_then_cleaned(tmp_path: Path) -> None:
    store = LocalCheckpointStore(tmp_path)
    store.save(1, {"step": 1})
    code = textwrap.dedent(
        f"""
        import os, torch
        from pathlib import Path
        from lightrft.adapters.checkpoint import LocalCheckpointStore
        store = LocalCheckpointStore(Path({str(tmp_path)!r}))
        store.save(2, {{"w": torch.ones(3)}}, extra_writer=lambda path: os._exit(3))
        """
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 3, proc.stderr  # died inside the save, no cleanup ran
    leftovers = [p.name for p in tmp_path.iterdir() if p.name.startswith(".tmp-step_00000002-")]
    assert len(leftovers) == 1 and (tmp_path / leftovers[0] / "state.pt").is_file()

    fresh = LocalCheckpointStore(tmp_path)  # as after a restart
    assert fresh.latest_step() == 1 and fresh.load(1) == {"step": 1}
    fresh.save(2, {"step": 2})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["step_00000001", "step_00000002"]


def test_a_step_directory_without_its_files_is_listed_as_a_damaged_checkpoint(
    tmp_path: Path,
) -> None:
    # only a rename of a complete save creates step_*: one without files lost them later
    store = LocalCheckpointStore(tmp_path)
    store.save(1, {"step": 1})
    (tmp_path / "step_00000009").mkdir()
    assert store.steps() == [1, 9] and store.latest_step() == 9
    state = tmp_path / "step_00000009" / "state.pt"
    meta = tmp_path / "step_00000009" / "metadata.json"
    assert store.verify(9) == [f"{state}: missing", f"{meta}: missing"]
    with pytest.raises(DamagedCheckpointError, match=f"^{state}: missing$"):
        store.load(9)
    with pytest.raises(CheckpointNotFoundError, match="no checkpoint for step 7"):
        store.load(7)


@pytest.mark.parametrize(
    ("state", "where", "type_name"),
    [
        ({"a": {"b": [1, np.float64(2.0)]}}, "state['a']['b'][1]", "numpy.float64"),
        ({"opt": {"state": {0: {"fn": print}}}}, "state['opt']['state'][0]['fn']", "builtin"),
        ({"s": (1, np.ones(2))}, "state['s'][1]", "numpy.ndarray"),
        ({"k": {object(): 1}}, "state['k'] (key <object object", "builtins.object"),
    ],
)
def test_unsafe_state_is_refused_before_anything_is_written(
    tmp_path: Path, state: dict[str, Any], where: str, type_name: str
) -> None:
    store = LocalCheckpointStore(tmp_path)
    with pytest.raises(UnsafeCheckpointStateError) as info:
        store.save(1, state)
    message = str(info.value)
    assert where in message and type_name in message and "weights_only" in message
    assert store.latest_step() is None
    assert not tmp_path.exists() or not any(tmp_path.iterdir())


def test_loading_a_missing_step_names_the_step_and_the_root(tmp_path: Path) -> None:
    store = LocalCheckpointStore(tmp_path / "run" / "ckpt")
    store.save(3, {"step": 3})
    with pytest.raises(FileNotFoundError) as info:
        store.load(4)
    message = str(info.value)
    assert "step 4" in message and str(tmp_path / "run" / "ckpt") in message
    assert "[3]" in message  # and what is there instead


def test_negative_step_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="step must be >= 0"):
        LocalCheckpointStore(tmp_path).save(-1, {})


def test_load_maps_tensors_to_the_configured_device(tmp_path: Path) -> None:
    store = LocalCheckpointStore(tmp_path, map_location=torch.device("meta"))
    store.save(1, {"w": torch.ones(2)})
    loaded = store.load(1)["w"]
    assert loaded.device.type == "meta" and loaded.shape == (2,)
    assert os.path.getsize(store.directory(1) / "state.pt") > 0
