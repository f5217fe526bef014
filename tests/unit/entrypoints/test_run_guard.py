"""The run-directory guard: fresh / resume decisions, the identity check and the history."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch
import yaml

from lightrft.adapters.checkpoint import LocalCheckpointStore
from lightrft.entrypoints.run_dir.directory import (
    RunDirectoryError,
    RunDirectoryLock,
    RunDirectoryLocked,
)
from lightrft.entrypoints.run_dir.guard import RunRequest, decide, guard_run_directory
from lightrft.entrypoints.run_dir.history import read_history
from lightrft.entrypoints.run_dir.identity import IdentityKeys, ResumeIdentityError
from tests.helpers.simulated_ranks import run_on_ranks

KEYS = IdentityKeys(include=("optim.*", "model.*"))


def _request(run: Path, lr: float, *stated: str, resume: bool | str = True) -> RunRequest:
    return RunRequest(
        run_dir=run,
        resume=resume,  # type: ignore[arg-type]
        overwrite=False,
        keys=KEYS,
        fingerprint=lambda: {"optim.lr": lr, "model.weights": "xxh3_128:00"},
        resume_changing=stated,
    )


def _trained(run: Path, step: int) -> None:
    """What a run leaves: metrics and a checkpoint."""
    (run / "metrics.jsonl").write_text(json.dumps({"step": step}) + "\n")
    LocalCheckpointStore(run / "checkpoints").save(step, {"w": torch.zeros(1)})


def test_a_start_and_its_resumes_keep_every_config_and_a_history(tmp_path: Path) -> None:
    run = tmp_path / "run"
    start = decide(_request(run, 1e-6, resume="auto"))
    assert start.start == "fresh"
    start.record(0, "optim: {lr: 1.0e-06}\n")
    _trained(run, 2)

    resumed = decide(_request(run, 1e-6))
    assert resumed.start == "resume" and resumed.changed == {}
    resumed.record(2, "optim: {lr: 1.0e-06}\n# resumed\n")

    assert (run / "config.yaml").read_text() == "optim: {lr: 1.0e-06}\n"  # the first, kept
    (second,) = run.glob("config.2*.yaml")
    assert second.read_text().endswith("# resumed\n")
    rows = read_history(run)
    assert [(r["event"], r["step"], r["config"]) for r in rows] == [
        ("start", 0, "config.yaml"),
        ("resume", 2, second.name),
    ]
    assert rows[1]["changed"] == {} and rows[1]["stated"] == []
    assert rows[0]["fingerprint"] == {"optim.lr": 1e-6, "model.weights": "xxh3_128:00"}


def test_a_changed_key_is_refused_unless_stated_and_then_recorded(tmp_path: Path) -> None:
    run = tmp_path / "run"
    decide(_request(run, 1e-6, resume="auto")).record(0, "first\n")
    _trained(run, 2)
    before = sorted(p.name for p in run.iterdir())
    with pytest.raises(ResumeIdentityError, match=r"optim.lr: 1e-06 -> 5e-05"):
        decide(_request(run, 5e-5))
    assert sorted(p.name for p in run.iterdir()) == before  # nothing written
    assert len(read_history(run)) == 1

    allowed = decide(_request(run, 5e-5, "optim.lr"))
    allowed.record(2, "second\n")
    row = read_history(run)[-1]
    assert row["changed"] == {"optim.lr": [1e-6, 5e-5]} and row["stated"] == ["optim.lr"]
    # the next resume compares with what the run continued with: the new lr
    assert decide(_request(run, 5e-5)).changed == {}
    with pytest.raises(ResumeIdentityError, match=r"optim.lr: 5e-05 -> 1e-06"):
        decide(_request(run, 1e-6))


def test_a_run_from_before_the_history_is_compared_with_its_config_yaml(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.yaml").write_text(yaml.safe_dump({"optim": {"lr": 1e-6}, "train": {"x": 1}}))
    _trained(run, 3)
    with pytest.raises(ResumeIdentityError, match=r"optim.lr: 1e-06 -> 5e-05"):
        decide(_request(run, 5e-5))
    assert decide(_request(run, 1e-6)).changed == {}  # the weights were not recorded


def test_the_records_of_a_start_that_trained_nothing_are_no_previous_run(tmp_path: Path) -> None:
    run = tmp_path / "run"
    decide(_request(run, 1e-6, resume=False)).record(0, "failed start\n")
    # e.g. the data path was wrong: nothing but config.yaml and history.jsonl
    again = decide(_request(run, 2e-6, resume=False))
    assert again.start == "fresh"
    again.record(0, "second start\n")
    assert (run / "config.yaml").read_text() == "second start\n"
    assert [r["fingerprint"]["optim.lr"] for r in read_history(run)] == [2e-6]


def test_any_other_entry_makes_a_previous_run(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "final_model").mkdir()
    (run / "final_model" / "config.json").write_text("{}")
    with pytest.raises(
        RunDirectoryError, match=r"holds a previous run \(final_model; no checkpoint"
    ):
        decide(_request(run, 1e-6, resume=False))


@dataclass
class _Rank:
    rank: int
    world_size: int
    all_reduce_sum: Callable[[torch.Tensor], torch.Tensor]


def test_every_rank_learns_rank_0s_decision_or_refusal(tmp_path: Path) -> None:
    run = tmp_path / "run"
    decide(_request(run, 1e-6, resume="auto")).record(0, "first\n")
    _trained(run, 2)

    def on(rank: int, lr: float) -> Callable[[Callable[[torch.Tensor], torch.Tensor]], str]:
        def body(reduce: Callable[[torch.Tensor], torch.Tensor]) -> str:
            try:
                with guard_run_directory(_request(run, lr), _Rank(rank, 2, reduce)) as start:
                    return start.start
            except RunDirectoryError as error:
                return str(error).split(":")[0]

        return body

    assert run_on_ranks([on(0, 1e-6), on(1, 1e-6)]) == ["resume", "resume"]
    assert run_on_ranks([on(0, 5e-5), on(1, 5e-5)]) == [
        f"cannot resume {run}",
        f"rank 0 refused run directory {run}",
    ]


def test_demo_rlhf_refuses_a_previous_demo_or_moves_it_aside_and_holds_the_lock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lightrft.entrypoints.recipes import rlhf

    run = tmp_path / "demo"
    run.mkdir()
    (run / "summary.json").write_text("{}")
    with pytest.raises(RunDirectoryError, match=r"holds a previous run \(summary.json"):
        rlhf.run_rlhf_demo(rlhf.RlhfDemoOptions(run_dir=run))
    assert (run / "summary.json").exists()

    def stages(options: rlhf.RlhfDemoOptions, overrides: object) -> dict[str, object]:
        with pytest.raises(RunDirectoryLocked):  # the demo holds its directory meanwhile
            RunDirectoryLock(options.run_dir).acquire()
        return {"ran": sorted(p.name for p in options.run_dir.iterdir())}

    monkeypatch.setattr(rlhf, "_run_stages", stages)
    summary = rlhf.run_rlhf_demo(rlhf.RlhfDemoOptions(run_dir=run, overwrite=True))
    assert summary == {"ran": [".lightrft-owner.json", ".lightrft.lock"]}
    (aside,) = tmp_path.glob("demo.old-*")
    assert (aside / "summary.json").exists()


def test_any_failure_of_rank_0_reaches_the_other_ranks_instead_of_hanging_them(
    tmp_path: Path,
) -> None:
    import threading

    def broken_identity() -> dict[str, object]:
        raise OSError("model directory unreadable")

    request = RunRequest(tmp_path / "run", False, False, KEYS, broken_identity)

    def on(rank: int) -> Callable[[Callable[[torch.Tensor], torch.Tensor]], str]:
        def body(reduce: Callable[[torch.Tensor], torch.Tensor]) -> str:
            try:
                with guard_run_directory(request, _Rank(rank, 2, reduce)):
                    return "ran"
            except Exception as error:  # noqa: BLE001 - the outcome is the assertion
                return f"{type(error).__name__}: {error}"

        return body

    outcome: list[list[str]] = []
    worker = threading.Thread(target=lambda: outcome.append(run_on_ranks([on(0), on(1)])))
    worker.daemon = True  # before the fix rank 1 waited in the all-reduce for ever
    worker.start()
    worker.join(timeout=30)
    assert not worker.is_alive(), "rank 1 is still waiting for rank 0"
    assert outcome == [
        [
            "OSError: model directory unreadable",
            f"RunDirectoryError: rank 0 refused run directory {tmp_path / 'run'}: see its log",
        ]
    ]


def test_a_key_compared_since_the_last_record_is_read_from_its_config_file(
    tmp_path: Path,
) -> None:
    """RD22 on a run recorded before rollout.mode was compared: its history fingerprint
    lacks the key, the config file of that row says what the run ran with."""
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.yaml").write_text(
        yaml.safe_dump({"optim": {"lr": 1e-6}, "rollout": {"mode": "sync"}})
    )
    row = {"event": "start", "step": 0, "config": "config.yaml", "fingerprint": {"optim.lr": 1e-6}}
    (run / "history.jsonl").write_text(json.dumps(row) + "\n")
    _trained(run, 3)
    request = RunRequest(
        run_dir=run,
        resume=True,
        overwrite=False,
        keys=IdentityKeys(include=("optim.*", "rollout.mode")),
        fingerprint=lambda: {"optim.lr": 1e-6, "rollout.mode": "async"},
    )
    with pytest.raises(ResumeIdentityError, match=r'rollout.mode: "sync" -> "async"'):
        decide(request)


def test_sft_resuming_an_rl_run_is_refused_as_such_before_any_model_loads(
    tmp_path: Path,
) -> None:
    """F07c: ``lightrft sft --resume`` on a GRPO run ended in ``lightrft: error: strategy``
    (a KeyError in the checkpoint's state) after the model loaded."""
    from lightrft.entrypoints.config import RunConfig
    from lightrft.entrypoints.config.sft_run_config import SftRunConfig
    from lightrft.entrypoints.run_dir.identity import RL_IDENTITY, SFT_IDENTITY, flatten

    flat = flatten(RunConfig().model_dump(mode="json"))
    sft_flat = flatten(SftRunConfig().model_dump(mode="json"))  # algorithm.* included
    run = tmp_path / "run"

    def request(keys: IdentityKeys, *stated: str) -> RunRequest:
        chosen = sft_flat if keys == SFT_IDENTITY else flat
        return RunRequest(run, True, False, keys, lambda: keys.select(chosen), stated)

    decide(RunRequest(run, "auto", False, RL_IDENTITY, lambda: RL_IDENTITY.select(flat))).record(
        0, "rl: 1\n"
    )
    _trained(run, 2)
    before = (run / "history.jsonl").read_text()
    with pytest.raises(ResumeIdentityError) as caught:
        decide(request(SFT_IDENTITY, "optim.lr"))
    assert str(caught.value).startswith(
        f"cannot resume {run} with lightrft sft: it holds an RL run (started by lightrft train"
    )
    assert "--overwrite" in str(caught.value) and "\n" not in str(caught.value)
    assert (run / "history.jsonl").read_text() == before  # nothing recorded
    assert decide(request(RL_IDENTITY)).start == "resume"  # the RL verb still resumes it

    sft_run = tmp_path / "sft"
    start = decide(
        RunRequest(sft_run, "auto", False, SFT_IDENTITY, lambda: SFT_IDENTITY.select(sft_flat))
    )
    start.record(0, "sft: 1\n")
    _trained(sft_run, 1)
    with pytest.raises(ResumeIdentityError, match="it holds an SFT run"):
        decide(RunRequest(sft_run, True, False, RL_IDENTITY, lambda: RL_IDENTITY.select(flat)))
    assert (
        decide(
            RunRequest(sft_run, True, False, SFT_IDENTITY, lambda: SFT_IDENTITY.select(sft_flat))
        ).start
        == "resume"
    )
