"""The registries of the algorithm families a config names, torch-free.

Each lists its built-in names (with their aliases) and the modules that register them; the
modules, which import torch, are imported when an entry is first looked up (``get``), not
when a config is validated: ``algorithm.policy_loss=nope`` is refused, with every valid
choice, without importing torch. A plugin module registers its own entries as before
(``@POLICY_LOSSES.register(...)``, docs/extending.md).
"""

from __future__ import annotations

from typing import Any

from lightrft.domain.registry import Registry

# Values are typed where they are defined (``advantages.ADVANTAGE_ESTIMATORS`` is a
# ``Registry[AdvantageEstimator]``): importing those types here would tie this module to the
# implementations it exists to keep out of a config's validation.
ADVANTAGE_ESTIMATORS: Registry[Any] = Registry(
    "advantage estimator",
    # process_grpo registers itself in its own module (domain/process_rewards.py)
    builtin_modules=("lightrft.domain.advantages", "lightrft.domain.process_rewards"),
    builtins={
        "grpo": ("group_norm",),
        "dr_grpo": (),
        "rloo": (),
        "opo": (),
        "cpgd": (),
        "reinforce_pp_baseline": ("reinforce_baseline",),
        "remax": (),
        "reinforce_pp": ("reinforce",),
        "gae": (),
        "opd": (),
        "process_grpo": (),
    },
)
POLICY_LOSSES: Registry[Any] = Registry(
    "policy loss",
    builtin_modules=("lightrft.domain.policy_losses",),
    builtins={
        name: () for name in ("ppo", "dapo", "gspo", "gspo_token", "gmpo", "cpgd", "reinforce")
    },
)
KL_ESTIMATORS: Registry[Any] = Registry(
    "KL estimator",
    builtin_modules=("lightrft.domain.kl",),
    builtins={"k1": (), "k2": (), "k3": ()},
)
KL_CONTROLLERS: Registry[Any] = Registry(
    "KL controller",
    builtin_modules=("lightrft.domain.kl",),
    builtins={"fixed": (), "adaptive": ()},
)
STEP_AGGREGATIONS: Registry[Any] = Registry(
    "step aggregation",
    builtin_modules=("lightrft.domain.process_rewards",),
    builtins={"min": (), "last": (), "product": (), "mean": ()},
)
AGGREGATIONS: Registry[Any] = Registry(
    "loss aggregation mode",
    builtin_modules=("lightrft.domain.aggregation",),
    builtins={
        name: ()
        for name in (
            "token-mean",
            "seq-mean-token-mean",
            "seq-mean-token-sum",
            "seq-mean-token-sum-norm",
        )
    },
)
