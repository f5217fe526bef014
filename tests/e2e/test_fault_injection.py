"""Faults during a run leave a resumable run directory; the resumed run is bitwise equal to
an uninterrupted one (the cycle on the CPU fakes with the real LocalCheckpointStore).

Faults: a full disk while a checkpoint is written (ENOSPC from the store's write), a crash
between committing a checkpoint and pruning old ones, SIGTERM (graceful stop), a damaged
newest checkpoint, and a reward source that fails on every sample.
"""

from __future__ import annotations

import errno
import os
import re
import signal
from pathlib import Path

import pytest
import torch
from structlog.testing import capture_logs

from lightrft.adapters.checkpoint import CheckpointWriteError, LocalCheckpointStore
from lightrft.adapters.checkpoint import local_store as local_store_module
from lightrft.application.reward_failures import RewardSourceFailingError
from lightrft.domain.checkpoint_health import NoIntactCheckpointError
from lightrft.domain.types import RewardResult
from lightrft.entrypoints.graceful_stop import GracefulStop
from tests.helpers.fake_cycle import FakeRig, build_rig

STEPS = 4


def _rig(store: LocalCheckpointStore, every: int = 1) -> FakeRig:
    return build_rig("grpo", total_steps=STEPS, checkpoint_every=every, checkpoints=store)  # type: ignore[arg-type]


def _params(rig: FakeRig) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in rig.policy.module.named_parameters()}


@pytest.fixture(scope="module")
def uninterrupted() -> dict[str, torch.Tensor]:
    rig = build_rig("grpo", total_steps=STEPS, checkpoint_every=1)
    rig.cycle.run()
    return _params(rig)


def _resume_and_compare(store: LocalCheckpointStore, expected: dict[str, torch.Tensor]) -> FakeRig:
    resumed = _rig(store)
    resumed.cycle.run()
    assert resumed.cycle.state.step == STEPS
    got = _params(resumed)
    for name, value in expected.items():
        assert torch.equal(got[name], value), name
    return resumed


def test_disk_full_while_writing_a_checkpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, uninterrupted: dict[str, torch.Tensor]
) -> None:
    store = LocalCheckpointStore(tmp_path / "ckpt", keep_last=2)
    real_save = torch.save
    calls = {"n": 0}

    def full_disk_on_third(obj, f, *args, **kwargs):  # type: ignore[no-untyped-def]
        calls["n"] += 1
        if calls["n"] == 3:
            raise OSError(errno.ENOSPC, "No space left on device", str(f))
        return real_save(obj, f, *args, **kwargs)

    monkeypatch.setattr(local_store_module.torch, "save", full_disk_on_third)
    rig = _rig(store)
    with pytest.raises(CheckpointWriteError) as info:
        rig.cycle.run()
    monkeypatch.undo()
    assert info.value.errno == errno.ENOSPC
    assert "step 3" in str(info.value) and "newest: step 2" in str(info.value)
    assert store.steps() == [1, 2]
    assert not [p for p in store.root.iterdir() if p.name.startswith(".tmp-")]
    _resume_and_compare(store, uninterrupted)


class _CrashBeforePrune(Exception):
    pass


def test_crash_between_commit_and_prune(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, uninterrupted: dict[str, torch.Tensor]
) -> None:
    store = LocalCheckpointStore(tmp_path / "ckpt", keep_last=1)

    def crash(keep: int) -> None:
        if keep == 3:
            raise _CrashBeforePrune
        LocalCheckpointStore._prune(store, keep)

    monkeypatch.setattr(store, "_prune", crash)
    with pytest.raises(_CrashBeforePrune):
        _rig(store).cycle.run()
    monkeypatch.undo()
    assert store.steps() == [2, 3]  # step 3 committed, step 2 not yet pruned
    _resume_and_compare(store, uninterrupted)
    assert store.steps() == [STEPS]  # the next save pruned both


def test_sigterm_finishes_the_step_checkpoints_and_stops(
    tmp_path: Path, uninterrupted: dict[str, torch.Tensor]
) -> None:
    store = LocalCheckpointStore(tmp_path / "ckpt", keep_last=2)
    rig = _rig(store, every=3)  # no scheduled checkpoint at step 2
    generate = rig.engine.generate
    calls = {"n": 0}

    def generate_then_signal(prompts, sampling):  # type: ignore[no-untyped-def]
        calls["n"] += 1
        if calls["n"] == 2:  # in the middle of step 2
            os.kill(os.getpid(), signal.SIGTERM)
        return generate(prompts, sampling)

    rig.engine.generate = generate_then_signal  # type: ignore[method-assign]
    previous = signal.getsignal(signal.SIGTERM)
    with GracefulStop(rig.cycle.components.collective) as stop:
        rig.cycle.run(should_stop=stop.requested)
    assert signal.getsignal(signal.SIGTERM) == previous
    assert stop.signalled and rig.cycle.stopped_early
    assert rig.cycle.state.step == 2 and store.steps() == [2]
    _resume_and_compare(store, uninterrupted)


def test_a_damaged_newest_checkpoint_falls_back_to_the_previous_one(
    tmp_path: Path, uninterrupted: dict[str, torch.Tensor]
) -> None:
    store = LocalCheckpointStore(tmp_path / "ckpt", keep_last=2)
    _rig(store).cycle.run(max_steps=3)
    state = store.directory(3) / "state.pt"
    state.write_bytes(state.read_bytes()[:1000])  # truncated
    with capture_logs() as logs:
        resumed = _rig(store)
        assert resumed.cycle.resume()
    assert resumed.cycle.state.step == 2
    (damaged,) = [e for e in logs if e["event"] == "checkpoint.damaged"]
    assert damaged["step"] == 3 and str(state) in damaged["problems"][0]
    assert damaged["skipped"] is True and damaged["falls_back_to"] == 2
    _resume_and_compare(store, uninterrupted)


def test_every_checkpoint_damaged_is_a_clear_error(tmp_path: Path) -> None:
    store = LocalCheckpointStore(tmp_path / "ckpt", keep_last=2)
    _rig(store).cycle.run(max_steps=2)
    for step in store.steps():
        (store.directory(step) / "state.pt").write_bytes(b"garbage")
    with pytest.raises(NoIntactCheckpointError, match="every checkpoint is damaged") as info:
        _rig(store).cycle.resume()
    assert "step_00000001/state.pt" in str(info.value)
    assert "step_00000002/state.pt" in str(info.value)


def test_a_reward_source_failing_on_every_sample_stops_with_a_checkpoint(tmp_path: Path) -> None:
    store = LocalCheckpointStore(tmp_path / "ckpt", keep_last=5)
    rig = build_rig("grpo", total_steps=6, checkpoint_every=10, checkpoints=store)  # type: ignore[arg-type]
    rule_score = rig.rule.score
    calls: list[int] = []

    def broken_from_the_second_step(samples):  # type: ignore[no-untyped-def]
        calls.append(len(samples))
        result = rule_score(samples)
        if len(calls) == 1:
            return RewardResult(result.scores, {**result.metrics, "failures": torch.tensor(0.0)})
        return RewardResult(
            torch.zeros(len(samples)), {"failures": torch.tensor(len(samples) * 1.0)}
        )

    rig.rule.score = broken_from_the_second_step  # type: ignore[method-assign]
    with pytest.raises(RewardSourceFailingError, match=r"'rule' \(100% of step 4") as info:
        rig.cycle.run()
    assert "3 consecutive steps" in str(info.value) and "--resume" in str(info.value)
    # steps 2 and 3 trained on fallback scores; step 4, the third failing one, did not: the
    # checkpoint holds the state before it, which a resumed run (source fixed) repeats
    assert rig.cycle.state.step == 3 and store.steps() == [3]
    rates = [m.get("reward/rule/failure_rate") for _, m in rig.tracker.metrics]
    assert rates == [0.0, 1.0, 1.0]
    resumed = build_rig("grpo", total_steps=6, checkpoint_every=10, checkpoints=store)  # type: ignore[arg-type]
    assert resumed.cycle.resume() and resumed.cycle.state.step == 3


def test_the_failure_policy_can_be_disabled() -> None:
    from dataclasses import replace

    from lightrft.application.cycle import RLCycle
    from lightrft.application.reward_failures import RewardFailurePolicy

    rig = build_rig("grpo", total_steps=4)
    settings = replace(rig.cycle.settings, reward_failures=RewardFailurePolicy(enabled=False))
    cycle = RLCycle(rig.cycle.components, settings)
    rig.rule.score = lambda samples: RewardResult(  # type: ignore[method-assign]
        torch.zeros(len(samples)), {"failures": torch.tensor(float(len(samples)))}
    )
    cycle.run()
    assert cycle.state.step == 4


@pytest.mark.slow
def test_two_ranks_resume_from_the_newest_step_intact_on_both(
    tiny_dir: Path, tmp_path: Path
) -> None:
    """FSDP2 on two CPU processes: rank 1's newest shard is truncated after the run; a
    resume goes back to the step both ranks hold intact and ends on the same weights."""
    import subprocess

    from safetensors.torch import load_file

    from tests.helpers.cli_runs import train_grpo_command

    run = tmp_path / "run"
    command = train_grpo_command(
        tiny_dir,
        run,
        "--nproc-per-node",
        "2",
        "backend.strategy=fsdp2",
        "rollout.prompts_per_step=1",
        "rollout.n_samples_per_prompt=2",
        "rollout.max_new_tokens=4",
        "train.micro_batch_size=1",
        "train.total_steps=4",
        "checkpoint.every=2",
        "data.eval=null",
        "data.train.num_builtin=16",
        "logging.progress=false",
    )
    env = {**os.environ, "PYTHONPATH": os.getcwd(), "OMP_NUM_THREADS": "1"}
    subprocess.run(command, env=env, check=True, capture_output=True, timeout=600)
    finished = load_file(str(run / "final_model" / "model.safetensors"))
    shard = run / "checkpoints" / "rank_00001" / "step_00000004" / "state.pt"
    shard.write_bytes(shard.read_bytes()[:-64])
    done = subprocess.run(
        [*command, "--resume"], env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "checkpoint.damaged" in done.stderr and "checkpoint.resumed" in done.stderr
    assert re.search(r"checkpoint.resumed\s+step=2", done.stderr)
    again = load_file(str(run / "final_model" / "model.safetensors"))
    assert all(torch.equal(finished[k], again[k]) for k in finished)
