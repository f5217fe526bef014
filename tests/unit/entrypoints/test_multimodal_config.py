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


def test_unset_audio_rate_is_the_models_and_another_rate_is_refused() -> None:
    from lightrft.adapters.hf.multimodal_inputs import MediaRequirements
    from lightrft.entrypoints.config.sections import DatasetConfig
    from lightrft.entrypoints.wiring.data import with_model_audio_rate

    audio = MediaRequirements(audio_placeholder="<|AUDIO|>", audio_sampling_rate=16000)
    unset = DatasetConfig()
    assert with_model_audio_rate(unset, audio, "data.train").audio_sampling_rate == 16000
    assert with_model_audio_rate(unset, None, "data.train").audio_sampling_rate is None  # text
    vision = MediaRequirements(image_placeholder="<|image_pad|>")
    assert with_model_audio_rate(unset, vision, "data.train").audio_sampling_rate is None
    same = DatasetConfig(audio_sampling_rate=16000)
    assert with_model_audio_rate(same, audio, "data.train") is same
    message = (
        "data.eval.audio_sampling_rate=8000 but the model's feature extractor takes 16000 Hz "
        "audio; set 16000 (or leave it unset) and resample the clips"
    )
    with pytest.raises(ValueError, match=re.escape(message)):
        with_model_audio_rate(DatasetConfig(audio_sampling_rate=8000), audio, "data.eval")


@pytest.mark.parametrize("packing", [False, True])
def test_model_packing_reaches_the_vision_language_policy_and_reference(
    tmp_path: Path, packing: bool
) -> None:
    import torch

    from lightrft.entrypoints.wiring.registries import BuildContext
    from tests.helpers.tiny_multimodal import save_tiny_vl_model
    from tests.unit.adapters.hf.test_vision_language_policy import mixed_batch

    save_tiny_vl_model(tmp_path, byte_level=True)
    overrides = [f"model.path={tmp_path}", "model.modality=vision-language"]
    config = load_config(overrides=[*overrides, f"model.packing={str(packing).lower()}"])
    load = loader(config)
    tokenizer = load.tokenizer(config, tmp_path)
    context = BuildContext(config, tmp_path, torch.device("cpu"), tokenizer, lambda: None)  # type: ignore[arg-type]
    _, batch = mixed_batch()
    for scorer in (load.policy(context), load.reference(context)):
        rows: list[int] = []
        scorer.module.register_forward_pre_hook(
            lambda _m, _a, kw, rows=rows: rows.append(kw["input_ids"].shape[0]),
            with_kwargs=True,
        )
        with torch.no_grad():
            scorer.forward(batch)
        assert rows == ([1] if packing else [3])  # one packed row, or the padded rows
