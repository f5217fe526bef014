"""`lightrft demo ttrl`: the main job with test-time RL's label-free majority-vote reward,
continuing from the main job's trained model."""

from __future__ import annotations

from pathlib import Path

from lightrft.entrypoints.recipes.demo import MAIN_JOB_MODEL

TTRL_OVERRIDES = [
    "logging.run_dir=runs/demo_ttrl",
    # test-time RL sharpens a policy whose majority answer is already right more often than
    # not: it continues from the main job's trained model. From the base model the majority
    # is a restatement ("Tom has 9"): agreement rose to 1.0 while accuracy fell 0.16 -> 0.00
    f"model.path={MAIN_JOB_MODEL}",
    # label-free: the reward is agreement with the majority answer of the sample's group; the
    # math rule is only measured (weight 0), so the references never reach the gradient and
    # eval/reward/math/accuracy is the held-out accuracy
    "reward.sources=[{type: ttrl, name: ttrl}, {type: math, name: math, weight: 0}]",
    # a trained policy needs a gentler step: at the main job's 5e-5, TTRL from the seed-0 model
    # (held-out 0.95) dropped its training accuracy from 0.98 to 0.53-0.64 within 3 steps
    "optim.lr=2e-5",
    # the majority vote needs a group: the sampling TTRL was measured with (docs/results.md),
    # 8 prompts x 8 samples at 0.8, not the main job's 16 x 4 at 0.6
    "rollout.prompts_per_step=8",
    "rollout.n_samples_per_prompt=8",
    "rollout.temperature=0.8",
]
"""``lightrft demo ttrl``: the main job with test-time RL's majority-vote reward instead."""


def ttrl_overrides(rest: list[str]) -> list[str]:
    """:data:`TTRL_OVERRIDES` plus ``rest``; refuses a ``model.path`` that does not exist (TTRL
    continues from a trained model)."""
    overrides = TTRL_OVERRIDES + rest
    model = [o.split("=", 1)[1] for o in overrides if o.startswith("model.path=")][-1]
    if not Path(model).exists():
        raise FileNotFoundError(
            f"lightrft demo ttrl continues from a trained model and {model} does not exist: "
            "run `lightrft demo` first, or give model.path=DIR"
        )
    return overrides
