"""Loading a saved Qwen2.5-Omni thinker and its two processors (model.modality=omni)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from transformers import Qwen2_5OmniThinkerForConditionalGeneration

from lightrft.adapters.hf.multimodal_loading import load_media_processors, load_multimodal_model
from tests.helpers.tiny_multimodal import tiny_qwen2_audio
from tests.helpers.tiny_omni import save_tiny_omni_thinker, tiny_omni_thinker


def test_a_saved_thinker_loads_with_both_processors(tmp_path: Path) -> None:
    directory = save_tiny_omni_thinker(tmp_path / "thinker")
    saved = json.loads((directory / "preprocessor_config.json").read_text())
    assert saved["image_processor_type"] == "Qwen2VLImageProcessor"  # one merged file
    assert saved["feature_extractor_type"] == "WhisperFeatureExtractor"
    model = load_multimodal_model(directory, "omni", torch.device("cpu"))
    assert isinstance(model, Qwen2_5OmniThinkerForConditionalGeneration)
    original = tiny_omni_thinker().state_dict()
    assert all(torch.equal(original[k], v) for k, v in model.state_dict().items())
    processors = load_media_processors(directory, min_pixels=28 * 28 * 4, max_pixels=28 * 28 * 8)
    assert processors.image_processor.size["longest_edge"] == 28 * 28 * 8
    assert processors.feature_extractor.n_samples == 16_000  # 1 s clips, as saved


def test_omni_refuses_a_directory_of_another_family(tmp_path: Path) -> None:
    tiny_qwen2_audio().config.save_pretrained(tmp_path)
    expected = (
        rf"model.modality=omni takes a model of type qwen2_5_omni_thinker, but {tmp_path} "
        r"holds model_type 'qwen2_audio'"
    )
    with pytest.raises(ValueError, match=expected):
        load_multimodal_model(tmp_path, "omni", torch.device("cpu"))
