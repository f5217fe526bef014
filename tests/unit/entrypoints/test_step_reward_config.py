"""Process rewards in the config: ``process_grpo`` needs a source that passes step rewards on,
``algorithm.process_weight`` reaches the estimator, ``eval.accuracy_sources`` the cycle."""

from __future__ import annotations

import pytest

from lightrft.entrypoints.config.loading import ConfigError, load_config

PROCESS = "algorithm.advantage_estimator=process_grpo"
STEPS = "reward.sources=[{type: math}, {type: process_rm, path: /prm, aggregate: steps}]"


def test_process_grpo_without_a_step_reward_source_is_refused_by_name() -> None:
    mean_only = "reward.sources=[{type: math}, {type: process_rm, path: /prm, aggregate: mean}]"
    for sources in ([], [mean_only]):
        with pytest.raises(ConfigError, match="process_rm with aggregate: steps"):
            load_config(None, [PROCESS, *sources])


def test_process_grpo_with_a_steps_source_loads_and_takes_process_weight() -> None:
    config = load_config(None, [PROCESS, STEPS, "algorithm.process_weight=0.25"])
    assert config.to_domain().algorithm.advantage.process_weight == 0.25
    assert load_config(None, [PROCESS, STEPS]).to_domain().algorithm.advantage.process_weight == 1
    with pytest.raises(ConfigError, match="process_weight"):
        load_config(None, [PROCESS, STEPS, "algorithm.process_weight=-1"])


def test_eval_accuracy_sources_reach_the_cycle_and_unknown_names_are_refused() -> None:
    config = load_config(None, [PROCESS, STEPS, "eval.accuracy_sources=[math]"])
    assert config.to_domain().cycle.eval_accuracy_sources == ("math",)
    assert load_config(None, []).to_domain().cycle.eval_accuracy_sources is None
    with pytest.raises(ConfigError, match=r"eval.accuracy_sources must name reward sources"):
        load_config(None, ["eval.accuracy_sources=[prm]"])
