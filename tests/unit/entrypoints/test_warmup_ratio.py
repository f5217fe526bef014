"""optim.warmup_ratio: warmup as a fraction of the run's optimizer steps (the original
LightRFT's --lr_warmup_ratio), rounded up."""

from __future__ import annotations

import pytest

from lightrft.entrypoints.config import load_config
from lightrft.entrypoints.config.loading import ConfigError

RUN = [
    "rollout.prompts_per_step=2",
    "rollout.n_samples_per_prompt=4",
    "train.total_steps=10",
]


def test_ratio_is_a_fraction_of_the_optimizer_steps_rounded_up() -> None:
    # 2 prompts x 4 samples, one mini-batch, 2 epochs: 2 optimizer steps a step, 20 in all
    config = load_config(
        None, [*RUN, "train.epochs=2", "optim.warmup_ratio=0.13"], algorithm="grpo"
    )
    params = config.optimizer_params()
    assert params.total_steps == 20
    assert params.warmup_steps == 3  # ceil(0.13 x 20) = ceil(2.6)


def test_without_a_ratio_warmup_steps_decides() -> None:
    config = load_config(None, [*RUN, "optim.warmup_steps=4"], algorithm="grpo")
    assert config.optimizer_params().warmup_steps == 4
    assert load_config(None, RUN, algorithm="grpo").optimizer_params().warmup_steps == 0


def test_ratio_and_steps_together_are_refused_naming_both() -> None:
    with pytest.raises(ConfigError, match=r"optim.warmup_ratio .* optim.warmup_steps"):
        load_config(
            None, [*RUN, "optim.warmup_ratio=0.1", "optim.warmup_steps=2"], algorithm="grpo"
        )


def test_the_original_flag_sets_the_ratio() -> None:
    config = load_config(None, [*RUN, "--lr_warmup_ratio", "0.5"], algorithm="grpo")
    assert config.optim.warmup_ratio == 0.5
    assert config.optimizer_params().warmup_steps == 5
