"""Where the options of the sections :meth:`RunConfig.to_domain` reads go.

A field of such a section whose name is a field of one of the parameters dataclasses built
from it (:data:`SECTION_PARAMETERS`) is copied by
:func:`~lightrft.entrypoints.field_copy.params_from`: declaring it in both is all an option
needs. Every other field is listed in :data:`NOT_COPIED` with what reads it: renamed or
computed into a parameter by ``to_domain``, or read by the entrypoints only (the container,
the wiring builders, the jobs). ``tests/architecture/test_option_homes.py`` checks that each
field is one or the other, so an option declared and then silently dropped fails it.
"""

from __future__ import annotations

from collections.abc import Mapping

from lightrft.application import params as service
from lightrft.application.off_policy_params import OffPolicyParams
from lightrft.domain.advantage_params import AdvantageParams
from lightrft.domain.optimizer_params import OptimizerParams
from lightrft.domain.policy_loss_params import PolicyLossParams
from lightrft.domain.sampling_params import SamplingParams

SECTION_PARAMETERS: Mapping[str, tuple[type, ...]] = {
    "algorithm": (service.AlgorithmParams, AdvantageParams, PolicyLossParams),
    "rollout": (service.RolloutParams, SamplingParams, OffPolicyParams),
    "reward": (service.RewardShapingParams,),
    "train": (service.TrainParams, service.CycleParams, service.HealthParams),
    "optim": (OptimizerParams,),
    "eval": (SamplingParams,),
}
"""The parameters dataclasses each section's same-named fields are copied into."""

NOT_COPIED: Mapping[str, str] = {
    # renamed or computed by RunConfig.to_domain / sampling()
    "rollout.n_samples_per_prompt": "SamplingParams.n",
    "rollout.stop": "SamplingParams.stop_strings",
    "rollout.mismatch_metrics": "RolloutParams.measure_mismatch (with the engine type)",
    "rollout.fp8": "RolloutParams.measure_mismatch, the default tis_cap; the engine builder",
    "reward.sources": "RewardShapingParams.weights and gates; the reward-source builders",
    "reward.stop_on_failures": "RewardFailurePolicy.enabled",
    "reward.failure_threshold": "RewardFailurePolicy.threshold",
    "reward.failure_patience": "RewardFailurePolicy.patience",
    "reward.max_concurrent_sources": "RewardShapingParams.concurrency",
    "reward.source_timeout_s": "RewardShapingParams.concurrency",
    "reward.unknown_label": "RewardShapingParams.recipes (the recipe book's fallback)",
    "train.health": "HealthParams.thresholds",
    "train.collapse_rollback": "HealthParams.rollback (RollbackChanges)",
    "optim.warmup_ratio": "OptimizerParams.warmup_steps (a fraction of the optimizer steps)",
    "optim.critic_lr": "OptimizerParams.lr of the critic's strategy (optimizer_params('critic'))",
    "eval.every": "CycleParams.eval_every",
    "eval.max_prompts": "CycleParams.eval_max_prompts",
    "eval.n_samples": "CycleParams.eval_sampling.n",
    "eval.accuracy_sources": "CycleParams.eval_accuracy_sources",
    # read by the entrypoints only
    "rollout.engine": "the engine builder (container)",
    "rollout.engine_threads": "the split engine's process (container)",
    "rollout.engine_devices": "the split engine's process (container)",
    "rollout.environment": "the environment builder (container)",
    "rollout.max_turns": "AgentParams (wiring/agents.py)",
    "rollout.agent": "AgentParams (wiring/agents.py)",
    "train.episodes": "total_steps from the dataset size (jobs/training.py)",
}
"""``section.field`` -> what reads it, for every field no parameter copies by name."""
