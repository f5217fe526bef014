"""The ``teacher`` section and ``opd``: teachers and the estimator come together, weights are
normalized, and both forms of the section translate to the advantage parameters."""

from __future__ import annotations

from pathlib import Path

import pytest

from lightrft.entrypoints.config.loading import load_config
from lightrft.entrypoints.recipes.distill import distill_overrides

OPD = "algorithm.advantage_estimator=opd"


def test_opd_without_a_teacher_is_refused() -> None:
    with pytest.raises(ValueError, match="distills from teachers: set teacher.path=DIR"):
        load_config(None, [OPD])


def test_a_teacher_without_opd_is_refused() -> None:
    with pytest.raises(ValueError, match="teacher is set but algorithm.advantage_estimator"):
        load_config(None, ["teacher.path=/t"])


def test_path_and_models_together_are_refused() -> None:
    with pytest.raises(ValueError, match="teacher.path or teacher.models, not both"):
        load_config(None, [OPD, "teacher.path=/t", "teacher.models=[{path: /u}]"])


def test_weights_are_normalized_into_the_advantage_params() -> None:
    config = load_config(
        None, [OPD, "teacher.models=[{path: /a, weight: 3}, {path: /b, weight: 1}]"]
    )
    assert config.teacher.weighted() == [("/a", 0.75), ("/b", 0.25)]
    advantage = config.to_domain().algorithm.advantage
    assert advantage.teacher_weights == (0.75, 0.25) and advantage.opd_weight == 1.0


def test_one_path_is_one_teacher_of_weight_one_and_opd_weight_mixes() -> None:
    config = load_config(None, [OPD, "teacher.path=/a", "algorithm.opd_weight=0.25"])
    advantage = config.to_domain().algorithm.advantage
    assert advantage.teacher_weights == (1.0,) and advantage.opd_weight == 0.25


def test_mixing_in_grpo_needs_groups() -> None:
    with pytest.raises(ValueError, match="n_samples_per_prompt must be >= 2"):
        load_config(
            None,
            [OPD, "teacher.path=/a", "algorithm.opd_weight=0.5", "rollout.n_samples_per_prompt=1"],
        )
    load_config(None, [OPD, "teacher.path=/a", "rollout.n_samples_per_prompt=1"])  # alone: fine


def test_the_distill_demo_refuses_a_missing_teacher_and_builds_a_valid_config(
    tmp_path: Path,
) -> None:
    with pytest.raises(FileNotFoundError, match="give --teacher DIR"):
        distill_overrides(tmp_path / "none", [])
    config = load_config(None, distill_overrides(tmp_path, ["train.seed=3"]), algorithm="grpo")
    assert config.algorithm.advantage_estimator == "opd" and config.model.path is None
    assert config.teacher.weighted() == [(str(tmp_path), 1.0)]
    assert config.train.seed == 3 and config.data.eval is not None
