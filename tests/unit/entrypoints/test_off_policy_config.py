"""The rollout.mode / max_staleness / placement keys: validation, the correction default, and
the split placement wired through the container (engine in its own process)."""

from __future__ import annotations

import pickle
import subprocess
import sys
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import torch

import lightrft.entrypoints.container as container_module
from lightrft.adapters.accelerators import CpuAccelerator
from lightrft.adapters.accelerators.visibility import DevicePlacementError
from lightrft.adapters.engine_process import ProcessRolloutEngine
from lightrft.application.rollout_producer import ThreadedRolloutFeed
from lightrft.entrypoints.api import build_container
from lightrft.entrypoints.config import load_config
from lightrft.entrypoints.config.loading import ConfigError
from lightrft.entrypoints.container import Container, build_feed, engine_in_child
from tests.unit.entrypoints.test_container import TOY_REWARD, config


@pytest.mark.parametrize(
    ("overrides", "staleness", "tis_cap"),
    [
        ({}, 0, None),
        ({"rollout.mode": "one_step_off"}, 1, 2.0),
        ({"rollout.mode": "async"}, 2, 2.0),
        ({"rollout.mode": "async", "rollout.max_staleness": 0}, 0, None),
        ({"rollout.mode": "async", "rollout.max_staleness": 4, "algorithm.tis_cap": 3.0}, 4, 3.0),
    ],
)
def test_mode_gives_the_staleness_and_corrects_stale_samples_by_default(
    overrides: dict[str, object], staleness: int, tis_cap: float | None
) -> None:
    settings = load_config(algorithm="grpo", overrides=overrides).to_domain()
    assert settings.off_policy.max_staleness == staleness
    assert settings.algorithm.resolved_loss.tis_cap == tis_cap


def test_a_staleness_the_mode_cannot_have_is_refused() -> None:
    with pytest.raises(ConfigError, match="one_step_off' needs max_staleness 1"):
        load_config(overrides={"rollout.mode": "one_step_off", "rollout.max_staleness": 2})
    with pytest.raises(ConfigError, match="placement"):
        load_config(overrides={"rollout.placement": "elsewhere"})
    with pytest.raises(ConfigError, match="rollout.partial_rollouts needs rollout.placement=split"):
        load_config(overrides={"rollout.mode": "one_step_off", "rollout.partial_rollouts": True})


SPLIT = {"rollout.mode": "one_step_off", "rollout.placement": "split"}


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (
            {"rollout.engine_devices": [1]},
            r"rollout.engine_devices=\[1\] needs rollout.placement=split",
        ),
        ({**SPLIT, "rollout.engine_devices": [0, 1, 0]}, r"names device\(s\) \[0\] twice"),
        (
            {**SPLIT, "rollout.engine_devices": [1, -1]},
            r"rollout.engine_devices.1: .*greater than or equal to 0",
        ),
        ({**SPLIT, "rollout.engine_devices": []}, "rollout.engine_devices is empty"),
    ],
)
def test_engine_devices_that_cannot_be_used_are_refused(
    overrides: dict[str, object], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        load_config(overrides=overrides)


def test_a_cpu_run_refuses_engine_devices_before_starting_the_engine() -> None:
    run = load_config(
        overrides={**SPLIT, "rollout.engine_devices": [1], "backend.accelerator": "cpu"}
    )
    with pytest.raises(DevicePlacementError, match=r"rollout.engine_devices=\[1\] places"):
        Container(config=run).feed()  # the container's accelerator: cpu
    with pytest.raises(DevicePlacementError, match="accelerator is 'cpu', which has none"):
        build_feed(run, CpuAccelerator)


class _CudaAccelerator:
    device_type = "cuda"


class _Recorded:
    """Stands in for ProcessRolloutEngine: keeps what it was built with, starts nothing."""

    def __init__(self, factory: Any, **options: Any) -> None:
        self.factory, self.options = factory, options


def test_engine_devices_map_through_the_trainers_visible_devices(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.setattr(container_module, "ProcessRolloutEngine", _Recorded)
    monkeypatch.setattr(container_module, "split_feed", lambda engine: engine)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,3")
    run = load_config(overrides={**SPLIT, "rollout.engine_devices": [1]})
    engine: Any = build_feed(run, _CudaAccelerator)
    assert engine.options["env"] == {"CUDA_VISIBLE_DEVICES": "3", "LOCAL_RANK": "0"}
    assert engine.factory.args[1] == "cuda"  # the child checks that runtime is not started
    too_far = load_config(overrides={**SPLIT, "rollout.engine_devices": [0, 2]})
    with pytest.raises(DevicePlacementError, match=r"index 2 but this process sees 2 device"):
        build_feed(too_far, _CudaAccelerator)
    unset = load_config(overrides=SPLIT)  # no engine_devices: the inherited environment
    assert build_feed(unset, _CudaAccelerator).options["env"] is None  # type: ignore[union-attr]


# a fresh interpreter that counts calls into torch.cuda while it imports what a spawned
# engine process imports (the CLI as its main module) and unpickles the engine's factory
_PROBE = """
import pickle, sys
import torch
calls = []
def counted(name, original):
    def call(*args, **kwargs):
        calls.append(name)
        return original(*args, **kwargs)
    return call
for name in ("is_available", "device_count", "init", "_lazy_init", "current_device", "set_device"):
    setattr(torch.cuda, name, counted(name, getattr(torch.cuda, name)))
import lightrft.entrypoints.cli
pickle.loads(sys.stdin.buffer.read())
print(calls, torch.cuda.is_initialized())
"""


@pytest.mark.slow
def test_unpickling_the_split_engines_factory_touches_no_cuda() -> None:
    run = load_config(overrides={**SPLIT, "rollout.engine_devices": [0]})
    factory = pickle.dumps(partial(engine_in_child, run, "cuda"))
    probe = subprocess.run(
        [sys.executable, "-c", _PROBE], input=factory, capture_output=True, timeout=300
    )
    assert probe.returncode == 0, probe.stderr.decode()
    assert probe.stdout.decode().strip() == "[] False"


@pytest.mark.slow
def test_split_placement_runs_the_configured_engine_in_its_own_process(
    tiny_dir: Path, tmp_path: Path
) -> None:
    common = {"reward.sources": [{"type": "python", "function": TOY_REWARD}]}
    sync = build_container(config(tiny_dir, tmp_path / "sync", **common)).cycle()
    split_container = build_container(
        config(
            tiny_dir,
            tmp_path / "split",
            **common,
            **{"rollout.mode": "async", "rollout.max_staleness": 0, "rollout.placement": "split"},
        )
    )
    split = split_container.cycle()
    assert isinstance(split.feed, ThreadedRolloutFeed)
    engine = split.feed.ports.engine
    assert isinstance(engine, ProcessRolloutEngine)
    try:
        sync.run(resume=False)
        split.run(resume=False)
        for (name, a), (_, b) in zip(
            sync.components.policy.module.named_parameters(),
            split.components.policy.module.named_parameters(),
            strict=True,
        ):
            assert torch.equal(a, b), name
        assert engine.weight_syncs == 2  # one verified sync per policy version
    finally:
        engine.close()


@pytest.mark.slow
def test_partial_rollouts_run_with_an_engine_that_cannot_resume(
    tiny_dir: Path, tmp_path: Path
) -> None:
    # the HF engine has no resumable generation: chunks go through generate() continuations
    overrides = {
        "reward.sources": [{"type": "python", "function": TOY_REWARD}],
        "rollout.mode": "one_step_off",
        "rollout.placement": "split",
        "rollout.partial_rollouts": True,
        "rollout.partial_chunk_tokens": 2,
    }
    cycle = build_container(config(tiny_dir, tmp_path / "partial", **overrides)).cycle()
    assert isinstance(cycle.feed, ThreadedRolloutFeed)
    engine = cycle.feed.ports.engine
    assert isinstance(engine, ProcessRolloutEngine) and not engine.can_resume
    try:
        history = cycle.run(resume=False)
        assert all(0.0 <= row["async/multi_version_fraction"] <= 1.0 for row in history)
        assert all(row["async/staleness_max"] <= 1.0 for row in history)
        assert all("async/mid_generation_weight_loads" in row for row in history)
    finally:
        engine.close()
