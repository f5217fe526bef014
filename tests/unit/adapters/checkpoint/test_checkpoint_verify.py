"""Checkpoint manifests: sizes and checksums recorded at save time, damage found and named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
import xxhash

from lightrft.adapters.checkpoint import LocalCheckpointStore
from lightrft.adapters.checkpoint.verify import inspect_store
from lightrft.domain.checkpoint_health import DamagedCheckpointError, VerifiableStore


def _store_with_two(tmp_path: Path) -> LocalCheckpointStore:
    store = LocalCheckpointStore(tmp_path / "ckpt", keep_last=None)
    for step in (1, 2):

        def extra(path: Path, step: int = step) -> None:
            (path / "shard_0.bin").write_bytes(bytes(range(step * 10)))

        store.save(step, {"w": torch.full((64,), float(step))}, extra_writer=extra)
    return store


def test_metadata_records_size_and_xxh3_of_every_file(tmp_path: Path) -> None:
    store = _store_with_two(tmp_path)
    assert isinstance(store, VerifiableStore)
    directory = store.directory(2)
    files = json.loads((directory / "metadata.json").read_text())["files"]
    assert sorted(files) == ["extra/shard_0.bin", "state.pt"]
    shard = (directory / "extra" / "shard_0.bin").read_bytes()
    assert files["extra/shard_0.bin"] == {
        "size": 20,
        "xxh3_128": xxhash.xxh3_128(shard).hexdigest(),
    }
    state = (directory / "state.pt").read_bytes()
    assert files["state.pt"]["size"] == len(state)
    assert store.verify(1) == [] and store.verify(2) == []


def test_truncation_bit_flips_and_missing_files_are_named(tmp_path: Path) -> None:
    store = _store_with_two(tmp_path)
    state = store.directory(2) / "state.pt"
    data = state.read_bytes()
    state.write_bytes(data[: len(data) // 2])
    (problem,) = store.verify(2)
    assert str(state) in problem and "truncated" in problem and f"expected {len(data)}" in problem

    flipped = bytearray(data)
    flipped[-5] ^= 0xFF  # same size, one byte changed
    state.write_bytes(bytes(flipped))
    (problem,) = store.verify(2)
    assert str(state) in problem and "checksum" in problem

    shard = store.directory(1) / "extra" / "shard_0.bin"
    shard.unlink()
    assert store.verify(1) == [f"{shard}: missing"]


def test_loading_a_truncated_state_names_the_file(tmp_path: Path) -> None:
    store = _store_with_two(tmp_path)
    state = store.directory(2) / "state.pt"
    state.write_bytes(state.read_bytes()[:100])
    with pytest.raises(DamagedCheckpointError, match="state.pt cannot be read"):
        store.load(2)
    assert torch.equal(store.load(1)["w"], torch.full((64,), 1.0))


def test_unreadable_metadata_is_a_problem_and_old_checkpoints_count_as_intact(
    tmp_path: Path,
) -> None:
    store = _store_with_two(tmp_path)
    meta = store.directory(1) / "metadata.json"
    legacy = json.loads(meta.read_text())
    del legacy["files"]  # written before checksums existed
    meta.write_text(json.dumps(legacy))
    assert store.verify(1) == []
    (store.directory(2) / "metadata.json").write_text("{not json")
    (problem,) = store.verify(2)
    assert "metadata.json: unreadable" in problem


def test_every_step_directory_is_reported_damaged_ones_included(tmp_path: Path) -> None:
    store = _store_with_two(tmp_path)
    store.save(3, {"w": torch.zeros(2)})
    store.save(4, {"w": torch.zeros(2)})
    (store.directory(4) / "state.pt").unlink()  # the newest lost its state file
    (store.directory(3) / "metadata.json").unlink()  # and the one before its manifest
    reports = {r.step: r for r in inspect_store(store.root)}
    assert [(s, r.status) for s, r in sorted(reports.items())] == [
        (1, "intact"),
        (2, "intact"),
        (3, "damaged"),
        (4, "damaged"),
    ]
    assert reports[4].problems == (f"{store.directory(4) / 'state.pt'}: missing",)
    assert reports[3].problems == (f"{store.directory(3) / 'metadata.json'}: missing",)


class _Tampered:
    """Pickles as a call of ``os.getcwd``: what safe (weights-only) loading must refuse."""

    def __reduce__(self) -> tuple[object, tuple[()]]:
        import os

        return (os.getcwd, ())


def _tamper(store: LocalCheckpointStore, step: int) -> Path:
    """Replaces the state by a pickle with a code object and drops the checksums, as someone
    who rewrote the whole checkpoint would."""
    state = store.directory(step) / "state.pt"
    torch.save({"w": _Tampered()}, state)
    meta = store.directory(step) / "metadata.json"
    record = json.loads(meta.read_text())
    del record["files"]
    meta.write_text(json.dumps(record))
    return state


def test_a_tampered_state_is_refused_in_one_line_naming_the_file(tmp_path: Path) -> None:
    store = _store_with_two(tmp_path)
    state = _tamper(store, 2)
    with pytest.raises(DamagedCheckpointError) as info:
        store.load(2)
    message = str(info.value)
    assert "\n" not in message and message.startswith(f"{state} holds objects")
    assert "GLOBAL posix.getcwd" in message or "GLOBAL os.getcwd" in message
    assert "weights_only` set to `False`" not in message and "trusted source" not in message
    (report,) = [r for r in inspect_store(store.root) if r.step == 2]
    assert report.status == "damaged" and report.problems == (message,)


def test_a_tampered_state_with_matching_checksums_is_damaged_not_intact(tmp_path: Path) -> None:
    """EDGE_CASES RD18v: the checksums in metadata.json rewritten to match the tampered
    state; verify used to call it intact (it only compared checksums) though resume refuses
    it. Verify loads the state as resume does."""
    from lightrft.adapters.checkpoint.manifest import build_manifest

    store = _store_with_two(tmp_path)
    state = _tamper(store, 2)
    meta = store.directory(2) / "metadata.json"
    record = json.loads(meta.read_text())
    record["files"] = build_manifest(store.directory(2), exclude=("metadata.json",))
    meta.write_text(json.dumps(record))
    assert store.verify(2) == []  # the checksums match: only safe loading finds it
    reports = {r.step: r for r in inspect_store(store.root)}
    assert reports[1].status == "intact"
    assert reports[2].status == "damaged"
    (problem,) = reports[2].problems
    assert problem.startswith(f"{state} holds objects that safe loading refuses")
