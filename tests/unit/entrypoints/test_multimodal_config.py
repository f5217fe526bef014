"""Multimodal configuration: the docs' Qwen2.5-VL Geo3K-style YAML validates, bad values are
named, and the modality selects the registered model loader."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from lightrft.entrypoints.config.loading import ConfigError, load_config
from lightrft.entrypoints.wiring.models import loader

DOC = Path(__file__).resolve().parents[3] / "docs" / "multimodal.md"


def test_the_documented_geo3k_config_validates(tmp_path: Path) -> None:
    block = re.search(r"```yaml\n(# geo3k.yaml.*?)```", DOC.read_text(), re.S)
    assert block is not None
    file = tmp_path / "geo3k.yaml"
    file.write_text(block.group(1))
    config = load_config(file, algorithm="grpo")
    assert config.model.modality == "vision-language"
    assert config.data.train.images_key == "images" and config.rollout.balance_ranks
    assert loader(config).prompt_encoder is not None  # the vision-language loader


def test_text_loader_has_no_media_hooks() -> None:
    config = load_config(algorithm="grpo")
    assert loader(config).prompt_encoder is None and loader(config).engine_inputs is None


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("model.modality=video", "model.modality: Input should be"),
        ("model.min_pixels=5000", "min_pixels \\(5000\\) exceeds model.max_pixels"),
        ("data.train.builtin=pictures", "data.train.builtin: Input should be"),
    ],
)
def test_bad_multimodal_settings_are_named(override: str, message: str) -> None:
    extra = ["model.max_pixels=4000"] if "min_pixels" in override else []
    with pytest.raises(ConfigError, match=message):
        load_config(overrides=[override, *extra], algorithm="grpo")
