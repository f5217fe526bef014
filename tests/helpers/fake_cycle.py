"""Builds an RLCycle wired entirely with CPU fakes, for the application tests."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from lightrft.adapters.fakes import (
    FakeAccelerator,
    FakeCollective,
    FakeCritic,
    FakeModelReward,
    FakePolicy,
    FakeReferenceModel,
    FakeRolloutEngine,
    FakeRuleReward,
    FakeStrategy,
    InMemoryCheckpointStore,
    InMemoryTracker,
    synthetic_prompts,
)
from lightrft.application.cycle import CycleComponents, CycleSettings, RLCycle
from lightrft.application.off_policy_params import OffPolicyParams
from lightrft.application.params import (
    AlgorithmParams,
    CycleParams,
    HealthParams,
    RolloutParams,
    TrainParams,
)
from lightrft.application.rollout_feed import RolloutFeed
from lightrft.domain.constraints import CostLimit
from lightrft.domain.ports import RewardSource
from lightrft.domain.types import OptimizerParams, SamplingParams

ALGORITHMS: dict[str, AlgorithmParams] = {
    "grpo": AlgorithmParams(advantage_estimator="grpo", policy_loss="ppo"),
    "dr_grpo": AlgorithmParams(
        advantage_estimator="dr_grpo",
        policy_loss="ppo",
        max_response_length=4,
        loss=None,
    ),
    "rloo": AlgorithmParams(advantage_estimator="rloo", policy_loss="ppo"),
    "reinforce_pp": AlgorithmParams(
        advantage_estimator="reinforce_pp", policy_loss="ppo", kl_coef=0.001
    ),
    "reinforce_pp_baseline": AlgorithmParams(
        advantage_estimator="reinforce_pp_baseline", policy_loss="ppo", kl_coef=0.001
    ),
    "gae": AlgorithmParams(advantage_estimator="gae", policy_loss="ppo"),
    "dapo": AlgorithmParams(advantage_estimator="grpo", policy_loss="dapo"),
    "gspo": AlgorithmParams(advantage_estimator="grpo", policy_loss="gspo"),
    "gmpo": AlgorithmParams(advantage_estimator="grpo", policy_loss="gmpo"),
    "cpgd": AlgorithmParams(advantage_estimator="cpgd", policy_loss="cpgd"),
    "remax": AlgorithmParams(advantage_estimator="remax", policy_loss="ppo"),
    "opo": AlgorithmParams(advantage_estimator="opo", policy_loss="ppo"),
}


@dataclass
class FakeRig:
    """The cycle plus handles on every fake, so tests can inspect what happened."""

    cycle: RLCycle
    policy: FakePolicy
    strategy: FakeStrategy
    engine: FakeRolloutEngine
    rule: FakeRuleReward
    model_reward: FakeModelReward
    reference: FakeReferenceModel | None
    critic: FakeCritic | None
    tracker: InMemoryTracker
    checkpoints: InMemoryCheckpointStore
    extra: dict[str, object] = field(default_factory=dict)


def build_rig(
    algorithm: str | AlgorithmParams = "grpo",
    *,
    total_steps: int = 40,
    prompts_per_step: int = 8,
    n: int = 4,
    lr: float = 2e-2,
    micro_batch_size: int = 8,
    mini_batch_size: int | None = None,
    epochs: int = 1,
    dynamic_sampling: bool = False,
    max_sampling_rounds: int = 3,
    eval_every: int | None = None,
    checkpoint_every: int | None = None,
    checkpoints: InMemoryCheckpointStore | None = None,
    seed: int = 0,
    with_reference: bool | None = None,
    model_reward_weight: float = 0.0,
    health: HealthParams | None = None,
    off_policy: OffPolicyParams | None = None,
    engine: FakeRolloutEngine | None = None,
    extra_rewards: Sequence[RewardSource] = (),
    feed: Callable[[RLCycle], RolloutFeed] | None = None,
    teachers: Sequence[FakeReferenceModel] = (),
    constraints: Sequence[CostLimit] = (),
) -> FakeRig:
    """``constraints`` name sources of ``extra_rewards`` (given weight 0)."""
    params = ALGORITHMS[algorithm] if isinstance(algorithm, str) else algorithm
    if algorithm == "dapo":
        dynamic_sampling = True
    policy = FakePolicy(seed=seed)
    strategy = FakeStrategy(OptimizerParams(lr=lr, max_grad_norm=1.0))
    strategy.prepare(policy.module)
    if engine is None:  # differs from the policy until the first sync
        engine = FakeRolloutEngine(seed=seed + 1)
    critic = critic_strategy = None
    if params.advantage_estimator == "gae":
        critic = FakeCritic(seed=seed)
        critic_strategy = FakeStrategy(OptimizerParams(lr=lr, max_grad_norm=1.0))
        critic_strategy.prepare(critic.module)
    need_ref = params.kl_coef > 0 if with_reference is None else with_reference
    reference = FakeReferenceModel(policy.module) if need_ref else None
    rule, model_reward = FakeRuleReward(), FakeModelReward()
    tracker = InMemoryTracker()
    store = checkpoints if checkpoints is not None else InMemoryCheckpointStore()
    components = CycleComponents(
        prompts=synthetic_prompts(256, seed=seed),
        engine=engine,
        policy=policy,
        policy_strategy=strategy,
        reward_sources=[rule, model_reward, *extra_rewards],
        collective=FakeCollective(),
        tracker=tracker,
        checkpoints=store,
        reference=reference,
        critic=critic,
        critic_strategy=critic_strategy,
        accelerator=FakeAccelerator(),
        eval_prompts=synthetic_prompts(64, seed=seed + 1000),
        teachers=teachers,
    )
    settings = CycleSettings(
        rollout=RolloutParams(
            prompts_per_step=prompts_per_step,
            sampling=SamplingParams(n=n, temperature=1.0, max_new_tokens=4),
            dynamic_sampling=dynamic_sampling,
            max_sampling_rounds=max_sampling_rounds,
        ),
        algorithm=params,
        shaping=replace(
            CycleSettings().shaping,
            weights={"rule": 1.0, "model": model_reward_weight}
            | {c.name: 0.0 for c in constraints},
            constraints=tuple(constraints),
        ),
        train=TrainParams(
            epochs=epochs,
            mini_batch_size=mini_batch_size,
            micro_batch_size=micro_batch_size,
            seed=seed,
        ),
        cycle=CycleParams(
            total_steps=total_steps,
            seed=seed,
            eval_every=eval_every,
            checkpoint_every=checkpoint_every,
        ),
        health=health if health is not None else HealthParams(),
        off_policy=off_policy if off_policy is not None else OffPolicyParams(),
    )
    cycle = RLCycle(components, settings, feed=feed)
    return FakeRig(
        cycle,
        policy,
        strategy,
        engine,
        rule,
        model_reward,
        reference,
        critic,
        tracker,
        store,
        {"critic_strategy": critic_strategy},
    )
