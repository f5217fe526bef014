"""The rollout.mode / max_staleness / placement keys: validation, the correction default, and
the split placement wired through the container (engine in its own process)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from lightrft.adapters.engine_process import ProcessRolloutEngine
from lightrft.application.rollout_producer import ThreadedRolloutFeed
from lightrft.entrypoints.api import build_container
from lightrft.entrypoints.config import load_config
from lightrft.entrypoints.config.loading import ConfigError
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
