"""Every verb that writes under a run directory holds its lock and keeps out of other runs
(issue 46): ``lightrft rm rejection-sample`` (its ``--out`` rows and its ``--sft RUN_DIR``)
and ``lightrft demo prm``, like ``train``, ``sft``, ``rm train``, the other demos and
``checkpoints export``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lightrft.entrypoints.jobs import judge_rejection
from lightrft.entrypoints.jobs.judge_rejection import (
    RejectionSampleOptions,
    rejection_sample_judgements,
)
from lightrft.entrypoints.run_dir.directory import (
    RunDirectoryError,
    RunDirectoryLock,
    RunDirectoryLocked,
)


def _no_sampling(options: RejectionSampleOptions, sampler: object) -> dict[str, Any]:
    raise AssertionError("sampled although the output should have been refused first")


def test_rejection_sample_refuses_rows_inside_a_run_directory_before_sampling(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(judge_rejection, "_sample", _no_sampling)
    run = tmp_path / "run"
    run.mkdir()
    (run / "history.jsonl").write_text("{}\n")
    options = RejectionSampleOptions(model="unused", data="unused", out=run / "rs" / "rows.jsonl")
    with pytest.raises(RunDirectoryError, match=f"--out {run}/rs/rows.jsonl is inside the run"):
        rejection_sample_judgements(options)
    assert sorted(p.name for p in run.iterdir()) == ["history.jsonl"]


def test_rejection_sample_refuses_rows_inside_the_sft_run_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(judge_rejection, "_sample", _no_sampling)
    sft = tmp_path / "sft"
    options = RejectionSampleOptions(
        model="unused", data="unused", out=sft / "rows.jsonl", sft_run_dir=sft
    )
    with pytest.raises(RunDirectoryError, match=f"is inside the run directory {sft}"):
        rejection_sample_judgements(options)
    assert not sft.exists()


def test_rejection_sample_holds_the_sft_run_directory_while_it_samples(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sft = tmp_path / "sft"
    seen: list[str] = []

    def sample(options: RejectionSampleOptions, sampler: object) -> dict[str, Any]:
        with pytest.raises(RunDirectoryLocked, match=f"run directory {sft} is in use"):
            RunDirectoryLock(sft).acquire()
        seen.append("sampled")
        return {"kept": 0}

    def train(options: RejectionSampleOptions) -> dict[str, Any]:
        lock = RunDirectoryLock(sft)  # released for the SFT job, which takes it
        lock.acquire()
        lock.release()
        return {"steps": 0}

    monkeypatch.setattr(judge_rejection, "_sample", sample)
    monkeypatch.setattr(judge_rejection, "_train", train)
    options = RejectionSampleOptions(
        model="unused", data="unused", out=tmp_path / "rows.jsonl", sft_run_dir=sft
    )
    assert rejection_sample_judgements(options) == {"kept": 0, "sft": {"steps": 0}}
    assert seen == ["sampled"]


def test_rejection_sample_into_a_run_directory_in_use_is_refused_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(judge_rejection, "_sample", _no_sampling)
    sft = tmp_path / "sft"
    holder = RunDirectoryLock(sft)
    holder.acquire()
    try:
        options = RejectionSampleOptions(
            model="unused", data="unused", out=tmp_path / "rows.jsonl", sft_run_dir=sft
        )
        with pytest.raises(RunDirectoryLocked, match="is in use by another lightrft process"):
            rejection_sample_judgements(options)
    finally:
        holder.release()


def test_demo_prm_holds_its_run_directory_and_refuses_one_in_use(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lightrft.entrypoints.recipes import prm

    run = tmp_path / "demo"

    def stage(*args: object) -> dict[str, object]:
        with pytest.raises(RunDirectoryLocked):  # the demo holds its directory meanwhile
            RunDirectoryLock(run).acquire()
        return {"path": str(run / "prm")}

    monkeypatch.setattr(prm, "warmup_stage", stage)
    monkeypatch.setattr(prm, "_prm_stage", stage)
    monkeypatch.setattr(prm, "_grpo_stage", stage)
    options = prm.PrmDemoOptions(run_dir=run, train_problems=2, eval_problems=1)
    summary = prm.run_prm_demo(options)
    assert summary["outcome_only"] == summary["process"] == {"path": str(run / "prm")}

    holder = RunDirectoryLock(run)
    holder.acquire()
    try:
        with pytest.raises(RunDirectoryLocked, match=f"run directory {run} is in use"):
            prm.run_prm_demo(options)
    finally:
        holder.release()
