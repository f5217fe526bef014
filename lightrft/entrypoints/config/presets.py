"""Per-algorithm presets: the dotted settings `lightrft train <algorithm>` starts from."""

from __future__ import annotations

from typing import Any


def _preset(estimator: str, loss: str = "ppo", **settings: Any) -> dict[str, Any]:
    """A preset: ``estimator`` and ``loss``, then ``settings`` (keys with ``__`` for ``.``)."""
    extra = {key.replace("__", "."): value for key, value in settings.items()}
    return {"algorithm.advantage_estimator": estimator, "algorithm.policy_loss": loss, **extra}


PRESETS: dict[str, dict[str, Any]] = {
    "grpo": _preset("grpo"),
    "dr_grpo": _preset("dr_grpo", algorithm__agg="seq-mean-token-sum-norm"),
    "dapo": _preset("grpo", "dapo", rollout__dynamic_sampling=True, reward__overlong_buffer=32),
    "gspo": _preset("grpo", "gspo"),
    "gmpo": _preset("grpo", "gmpo"),
    "rloo": _preset("rloo"),
    "reinforce_pp": _preset("reinforce_pp", algorithm__kl_coef=0.01),
    "reinforce_pp_baseline": _preset("reinforce_pp_baseline", algorithm__kl_coef=0.001),
    "cpgd": _preset("cpgd", "cpgd"),
    "remax": _preset("remax"),
    "opo": _preset("opo"),
    "ppo": _preset("gae", rollout__n_samples_per_prompt=1, algorithm__kl_coef=0.01),
}
"""``lightrft train NAME``: NAME's settings, applied before the config file and overrides."""
