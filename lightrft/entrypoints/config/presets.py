"""Per-algorithm presets: the dotted settings `lightrft train <algorithm>` starts from."""

from __future__ import annotations

from typing import Any

PRESETS: dict[str, dict[str, Any]] = {
    "grpo": {"algorithm.advantage_estimator": "grpo", "algorithm.policy_loss": "ppo"},
    "dr_grpo": {
        "algorithm.advantage_estimator": "dr_grpo",
        "algorithm.policy_loss": "ppo",
        "algorithm.agg": "seq-mean-token-sum-norm",
    },
    "dapo": {
        "algorithm.advantage_estimator": "grpo",
        "algorithm.policy_loss": "dapo",
        "rollout.dynamic_sampling": True,
        "reward.overlong_buffer": 32,
    },
    "gspo": {"algorithm.advantage_estimator": "grpo", "algorithm.policy_loss": "gspo"},
    "gmpo": {"algorithm.advantage_estimator": "grpo", "algorithm.policy_loss": "gmpo"},
    "rloo": {"algorithm.advantage_estimator": "rloo", "algorithm.policy_loss": "ppo"},
    "reinforce_pp": {
        "algorithm.advantage_estimator": "reinforce_pp",
        "algorithm.policy_loss": "ppo",
        "algorithm.kl_coef": 0.01,
    },
    "reinforce_pp_baseline": {
        "algorithm.advantage_estimator": "reinforce_pp_baseline",
        "algorithm.policy_loss": "ppo",
        "algorithm.kl_coef": 0.001,
    },
    "cpgd": {"algorithm.advantage_estimator": "cpgd", "algorithm.policy_loss": "cpgd"},
    "remax": {"algorithm.advantage_estimator": "remax", "algorithm.policy_loss": "ppo"},
    "opo": {"algorithm.advantage_estimator": "opo", "algorithm.policy_loss": "ppo"},
    "ppo": {
        "algorithm.advantage_estimator": "gae",
        "algorithm.policy_loss": "ppo",
        "rollout.n_samples_per_prompt": 1,
        "algorithm.kl_coef": 0.01,
    },
}
"""``lightrft train NAME``: NAME's settings, applied before the config file and overrides."""
