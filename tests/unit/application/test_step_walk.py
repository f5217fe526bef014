"""The walk of one step visits no module twice.

The walk of a call is the sequence of ``lightrft.application`` modules it enters at depth
one: a frame counts when no other application frame lies between it and the call, except
frames of the ``transparent`` modules (the caller's own module: its private helpers are part
of it). Frames outside ``lightrft.application`` (the standard library, torch, the domain, the
fakes) are looked through. A module visited, left for another and entered again means the
step's work ping-pongs between modules (as the experience maker, the trained-row rule and the
optimizer once did), so the test fails.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from types import CodeType, FrameType
from typing import Any

import pytest
import torch

import lightrft.application
from lightrft.application.cycle import RLCycle
from lightrft.application.experience_maker import ExperienceMaker
from lightrft.application.params import AlgorithmParams
from lightrft.domain.policy_losses import PolicyLossParams
from lightrft.domain.rewards import RunningMoments
from lightrft.domain.types import RewardResult, RewardSample
from tests.helpers.fake_cycle import FakeRig, build_rig

APPLICATION = Path(lightrft.application.__file__).resolve().parent


def _module(code: CodeType) -> str | None:
    """The application module ``code`` belongs to (dotted, below ``lightrft.application``)."""
    path = Path(code.co_filename)
    if not path.is_absolute():
        return None  # generated code (dataclass methods), no module's own
    try:
        relative = path.resolve().relative_to(APPLICATION)
    except ValueError:
        return None
    return ".".join(relative.with_suffix("").parts)


def walk(root: CodeType, transparent: set[str], call: Callable[[], object]) -> list[str]:
    """The application modules entered at depth one below the frames running ``root``
    while ``call()`` runs, consecutive repeats merged."""
    visits: list[str] = []

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event != "call":
            return
        module = _module(frame.f_code)
        if module is None or module in transparent:
            return
        outer = frame.f_back
        while outer is not None and outer.f_code is not root:
            between = _module(outer.f_code)
            if between is not None and between not in transparent:
                return  # deeper than one
            outer = outer.f_back
        if outer is not None and (not visits or visits[-1] != module):
            visits.append(module)

    sys.setprofile(profile)
    try:
        call()
    finally:
        sys.setprofile(None)
    return visits


def revisited(visits: list[str]) -> list[str]:
    """The modules entered again after another one was visited."""
    return sorted({m for i, m in enumerate(visits) if m in visits[:i]})


def _half_the_groups_vary(samples: Sequence[RewardSample]) -> RewardResult:
    return RewardResult(
        torch.tensor([float(i % 4 == 0 and (i // 4) % 2 == 0) for i in range(len(samples))])
    )


def _skip_rows_rig() -> FakeRig:
    """Old log-probs on the trained rows only: two mini-batches, the TIS correction, a
    sampling temperature other than 1, zero-advantage rows skipped."""
    algorithm = AlgorithmParams(
        advantage_estimator="grpo", policy_loss="ppo", loss=PolicyLossParams(tis_cap=2.0)
    )
    rig = build_rig(algorithm, prompts_per_step=8, n=4, mini_batch_size=16, seed=2)
    s = rig.cycle.settings
    sampling = replace(s.rollout.sampling, temperature=0.7)
    settings = replace(
        s,
        rollout=replace(s.rollout, sampling=sampling),
        train=replace(s.train, skip_zero_advantage_rows=True),
    )
    rig.cycle = RLCycle(rig.cycle.components, settings)
    rig.rule.score = _half_the_groups_vary  # type: ignore[method-assign]
    return rig


RIGS: dict[str, Callable[[], FakeRig]] = {
    "grpo": lambda: build_rig("grpo", prompts_per_step=4),
    "grpo_two_epochs_kl": lambda: build_rig(
        replace(AlgorithmParams(advantage_estimator="grpo", policy_loss="ppo"), kl_coef=0.01),
        prompts_per_step=4,
        epochs=2,
    ),
    "gae": lambda: build_rig("gae", prompts_per_step=4),
    "reinforce_pp": lambda: build_rig("reinforce_pp", prompts_per_step=4),
    "dapo": lambda: build_rig("dapo", prompts_per_step=4),
    "remax": lambda: build_rig("remax", prompts_per_step=4),
    "skip_rows": _skip_rows_rig,
}


@pytest.mark.parametrize("name", sorted(RIGS))
def test_one_step_enters_each_module_once(name: str) -> None:
    rig = RIGS[name]()
    cycle = rig.cycle
    visits = walk(RLCycle.train_step.__code__, {"cycle"}, cycle.train_step)
    assert revisited(visits) == [], visits
    assert visits[:2] == ["rollout_feed", "experience_maker"]
    assert visits[-2:] == ["step_metrics", "sample_rows"]


def test_the_step_walk_is_the_documented_one() -> None:
    visits = walk(RLCycle.train_step.__code__, {"cycle"}, build_rig("grpo").cycle.train_step)
    assert visits == [
        "rollout_feed",
        "experience_maker",
        "reward_failures",
        "health_watch",
        "policy_update",
        "step_metrics",
        "sample_rows",
    ]


@pytest.mark.parametrize("name", sorted(RIGS))
def test_the_experience_stages_are_entered_once_each(name: str) -> None:
    rig = RIGS[name]()
    maker = rig.cycle.maker
    prompts = [rig.cycle.components.prompts[i] for i in range(4)]
    collected = maker.collect(prompts, seed=3)

    def annotate() -> object:
        return maker.annotate(collected, kl_coef=0.01, moments=RunningMoments())

    visits = walk(ExperienceMaker.annotate.__code__, {"experience_maker"}, annotate)
    assert revisited(visits) == [], visits
    assert visits[-1] == "stages.experience_batch"


def test_the_walk_sees_a_ping_pong() -> None:
    """The check can fail: a call that returns to a module after another one is caught."""

    def ping_pong() -> None:
        from lightrft.application import batching, trained_rows

        trained_rows.rows_with_advantage(torch.ones(1, 1), torch.ones(1, 1))
        batching.split_by_count(torch.arange(2), 1)
        trained_rows.rows_with_advantage(torch.ones(1, 1), torch.ones(1, 1))

    visits = walk(ping_pong.__code__, set(), ping_pong)
    assert visits == ["trained_rows", "batching", "trained_rows"]
    assert revisited(visits) == ["trained_rows"]
