"""``reward.constraints``: validated with errors naming the field; translated to the domain."""

from __future__ import annotations

import json

import pytest

from lightrft.domain.constraints import CostLimit
from lightrft.entrypoints.config.loading import load_config

SOURCES = "reward.sources=" + json.dumps(
    [{"type": "math"}, {"type": "format", "name": "cost", "weight": 0}]
)


def _load(constraints: list[dict[str, object]], *extra: str):  # type: ignore[no-untyped-def]
    overrides = [SOURCES, "reward.constraints=" + json.dumps(constraints), *extra]
    return load_config(None, overrides, algorithm="grpo")


def test_a_constraint_reaches_the_cycle_settings() -> None:
    config = _load([{"source": "cost", "limit": 0.1, "cost": "violation", "multiplier_lr": 0.5}])
    assert config.to_domain().shaping.constraints == (
        CostLimit("cost", 0.1, 0.5, init=1.0, as_violation=True, violation_threshold=0.0),
    )
    assert load_config(None, [SOURCES], algorithm="grpo").to_domain().shaping.constraints == ()


@pytest.mark.parametrize(
    ("constraints", "message"),
    [
        ([{"source": "nope", "limit": 0.1}], r"reward.constraints\[0\].source 'nope' is not"),
        ([{"source": "math", "limit": 0.1}], r"'math' has weight 1.0 .* must have weight 0"),
        (
            [{"source": "cost", "limit": 2, "cost": "violation"}],
            r"reward.constraints\[0\].limit \(2.0\) bounds a violation rate",
        ),
        ([{"source": "cost", "limit": 0.1, "multiplier_lr": 0}], r"constraints.0.multiplier_lr"),
        ([{"source": "cost", "limit": 0.1, "init": -1}], r"constraints.0.init"),
        ([{"source": "cost"}], r"constraints.0.limit"),
        ([{"source": "cost", "limit": 0.1}] * 2, r"name a source twice"),
    ],
)
def test_bad_constraints_are_refused_by_name(
    constraints: list[dict[str, object]], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        _load(constraints)


def test_an_estimator_with_a_critic_is_refused() -> None:
    with pytest.raises(ValueError, match="critic-free estimator .* 'gae'"):
        _load([{"source": "cost", "limit": 0.1}], "algorithm.advantage_estimator=gae")
