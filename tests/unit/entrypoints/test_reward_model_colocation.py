"""Two scalar reward models and a policy on one device: each reward model is awake only in
the reward phases (the phase log says so), and the run equals one that never offloads."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
import structlog
import torch
from dependency_injector import providers
from structlog.testing import capture_logs

from lightrft.adapters.reward_models import HfScalarRewardModel
from lightrft.application.phases import COMPONENTS, DEFAULT_PLAN, Phase
from lightrft.entrypoints.api import build_container
from lightrft.entrypoints.config import load_config
from tests.unit.adapters.hf.hf_tiny import tiny_tokenizer
from tests.unit.adapters.reward_models.rm_tiny import tiny_classifier
from tests.unit.entrypoints.test_container import config

REWARD_PHASES = {Phase.REWARD, Phase.EVAL_REWARD}


@pytest.fixture(autouse=True)
def _debug_logs() -> None:
    torch.set_num_threads(1)
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.DEBUG))
    yield
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))


@pytest.fixture(scope="module")
def rm_dirs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    root = tmp_path_factory.mktemp("rms")
    cpu = torch.device("cpu")
    return [
        HfScalarRewardModel(tiny_classifier(seed), tiny_tokenizer(), cpu).export_hf(
            root / f"rm{seed}"
        )
        for seed in (1, 2)
    ]


def run(
    tiny_dir: Path, run_dir: Path, rm_dirs: list[Path], offload: bool
) -> tuple[list[dict[str, float]], list[Any]]:
    sources = [
        {"type": "scalar_rm", "path": str(rm_dirs[0]), "name": "helpful"},
        {"type": "scalar_rm", "path": str(rm_dirs[1]), "name": "safe", "weight": 0.5},
    ]
    container = build_container(config(tiny_dir, run_dir, **{"reward.sources": sources}))
    if not offload:
        container.plan.override(providers.Object({p: COMPONENTS for p in DEFAULT_PLAN}))
    cycle = container.cycle()
    with capture_logs() as events:
        history = cycle.run(resume=False)
    return history, events


def test_each_reward_model_is_awake_only_in_reward_phases(
    tiny_dir: Path, tmp_path: Path, rm_dirs: list[Path]
) -> None:
    history, events = run(tiny_dir, tmp_path / "offload", rm_dirs, offload=True)
    switches = [e for e in events if e["event"] == "phase.switch"]
    assert {e["phase"] for e in switches} >= {Phase.ROLLOUT, Phase.REWARD, Phase.TRAIN}
    for e in switches:
        assert ("reward_models" in e["awake"]) == (e["phase"] in REWARD_PHASES), e
    # the phase log: every reward model is loaded right before each reward phase, and put
    # away right after it (before the next phase starts)
    log = [
        (e["event"], e.get("phase") or e.get("name"))
        for e in events
        if e["event"] in ("phase.switch", "reward_model.onload", "reward_model.offload")
    ]
    reward_phases = sum(1 for e in switches if e["phase"] == Phase.REWARD)
    assert reward_phases == 2
    for name in ("helpful", "safe"):
        assert log.count(("reward_model.onload", name)) == reward_phases
    for i, entry in enumerate(log):
        if entry[0] == "reward_model.onload":
            following = next(x for x in log[i:] if x[0] == "phase.switch")
            assert following[1] == Phase.REWARD
        if entry == ("phase.switch", Phase.REWARD):
            nxt = log[i + 1 : i + 3]
            assert sorted(nxt) == [
                ("reward_model.offload", "helpful"),
                ("reward_model.offload", "safe"),
            ]
    for metrics in history:
        assert {"reward/helpful/mean", "reward/safe/mean", "time/reward/helpful_s"} <= set(metrics)

    plain, plain_events = run(tiny_dir, tmp_path / "awake", rm_dirs, offload=False)
    last_switch = max(i for i, e in enumerate(plain_events) if e["event"] == "phase.switch")
    moves = [i for i, e in enumerate(plain_events) if e["event"].startswith("reward_model.")]
    assert all(i > last_switch for i in moves)  # only the final rest() puts them away
    keys = ["reward/helpful/mean", "reward/safe/mean", "reward/mean", "train/policy_loss"]
    for a, b in zip(history, plain, strict=True):
        compared = [key for key in keys if key in a]
        assert len(compared) >= 3, sorted(a)
        for key in compared:
            assert a[key] == b[key], key


def test_generative_and_remote_sources_build_from_config(tiny_dir: Path, tmp_path: Path) -> None:
    from lightrft.adapters.reward_models.generative import HfGenerativeRewardModel
    from lightrft.adapters.reward_service import RemoteRewardSource

    overrides = {
        "model.path": str(tiny_dir),
        "logging.run_dir": str(tmp_path),
        "reward.sources": [
            {"type": "generative_rm", "name": "judge", "max_new_tokens": 4, "weight": 0.5},
            {"type": "remote", "url": "http://127.0.0.1:9", "name": "far", "max_attempts": 1},
        ],
    }
    container = build_container(load_config(algorithm="grpo", overrides=overrides))
    judge, far = container.reward_sources()
    assert isinstance(judge, HfGenerativeRewardModel) and judge.name == "judge"
    assert isinstance(far, RemoteRewardSource) and far.url == "http://127.0.0.1:9"
    judge.offload()
    assert not judge.engine.is_awake
