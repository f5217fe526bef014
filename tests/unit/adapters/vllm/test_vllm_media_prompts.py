"""Encoded media prompts as vLLM requests, without vLLM: one placeholder per item, the raw
items under vLLM's modality names, per-prompt limits, family weight names and the
never-sampled tokens' bias. (The image path is GPU-only on this machine: vLLM's vision
models need torchvision; only this conversion is tested.)"""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from PIL import Image

from lightrft.adapters.engine_parts.source_media import SOURCE_MEDIA_KEY, SourceMedia
from lightrft.adapters.vllm.families import SUPPRESS_BIAS, engine_names, suppression_bias
from lightrft.adapters.vllm.media_prompts import (
    MediaPromptError,
    check_limits,
    collapse_placeholders,
    media_limits,
    media_request,
    refuse_media,
)
from lightrft.domain.types import PromptRecord
from tests.helpers.tiny_multimodal import token_id
from tests.unit.adapters.hf.test_audio_language import audio_prompts
from tests.unit.adapters.hf.test_vision_language_policy import mixed_prompts

IMAGE, AUDIO = token_id("<|image_pad|>"), token_id("<|AUDIO|>")


def test_image_rows_get_one_placeholder_per_image_and_the_pil_images() -> None:
    prompts = mixed_prompts()  # row 0: two images, row 1: text, row 2: one image
    requests = [media_request(p) for p in prompts]
    counts = prompts[0].multimodal["image_tokens"]
    assert requests[0].prompt_token_ids.count(IMAGE) == 2
    assert len(requests[0].prompt_token_ids) == len(prompts[0].prompt_token_ids) - sum(counts) + 2
    assert [im.size for im in requests[0].multi_modal_data["image"]] == [(60, 90), (40, 40)]
    assert all(isinstance(im, Image.Image) for im in requests[0].multi_modal_data["image"])
    assert requests[1].multi_modal_data == {}
    assert requests[1].prompt_token_ids == list(prompts[1].prompt_token_ids)
    assert requests[2].counts == {"image": 1}
    assert media_limits(prompts) == {"image": 2}
    # the collapsed ids are the ids the chat template rendered (one pad per image)
    assert requests[0].prompt_token_ids.count(IMAGE) == prompts[0].prompt_text.count(
        "<|image_pad|>"
    )


def test_audio_rows_get_float32_waveforms_with_their_rate() -> None:
    prompts = audio_prompts()  # row 0: 0.5 s + 1 s clips (12 + 25 positions)
    request = media_request(prompts[0])
    assert request.prompt_token_ids.count(AUDIO) == 2
    clips = request.multi_modal_data["audio"]
    assert [(w.dtype, w.shape, r) for w, r in clips] == [
        (np.float32, (8000,), 16000),
        (np.float32, (16000,), 16000),
    ]
    assert media_limits(prompts) == {"audio": 2}


def test_a_grey_image_is_given_as_rgb() -> None:
    grey = Image.new("L", (28, 28))
    entry = SourceMedia("image", 7, (grey,), (2,))
    record = PromptRecord("g", "x", (3, 7, 7, 4), multimodal={SOURCE_MEDIA_KEY: (entry,)})
    (image,) = media_request(record).multi_modal_data["image"]
    assert image.mode == "RGB"
    assert media_request(record).prompt_token_ids == [3, 7, 4]


def test_adjacent_items_are_split_by_their_counts() -> None:
    entry = SourceMedia("audio", 9, ("a", "b"), (2, 3))
    assert collapse_placeholders([1, 9, 9, 9, 9, 9, 2], entry, "r") == [1, 9, 9, 2]


@pytest.mark.parametrize(
    ("ids", "message"),
    [
        ((1, 9, 9, 2), r"r: audio item 0 should occupy 3 consecutive"),  # cut short
        ((1, 9, 9, 9, 2, 9), r"r: more audio placeholder tokens"),  # one too many
        ((1, 2), r"r: the prompt holds 0 audio placeholder run\(s\) but its media have 1"),
    ],
)
def test_ids_that_do_not_match_the_counts_are_refused(ids: tuple, message: str) -> None:
    entry = SourceMedia("audio", 9, ("clip",), (3,))
    with pytest.raises(MediaPromptError, match=message):
        collapse_placeholders(ids, entry, "r")


def test_media_without_their_raw_items_are_refused_by_row() -> None:
    record = replace(audio_prompts()[0], multimodal={"audio_tokens": (12,), "media_cost": 12})
    with pytest.raises(MediaPromptError, match=r"row 0: the record carries media .*raw items"):
        media_request(record)


def test_a_kind_vllm_is_not_given_is_refused() -> None:
    entry = SourceMedia("video", 9, ("v",), (1,))
    record = PromptRecord("v", "x", (9,), multimodal={SOURCE_MEDIA_KEY: (entry,)})
    with pytest.raises(MediaPromptError, match=r"v: media of kind 'video'"):
        media_request(record)


def test_rows_over_the_engines_limit_are_named() -> None:
    prompts = audio_prompts()
    requests = [media_request(p) for p in prompts]
    check_limits(requests, prompts, {"audio": 2})
    with pytest.raises(MediaPromptError, match=r"row 0: 2 audio item\(s\).*media_per_prompt"):
        check_limits(requests, prompts, {"audio": 1})
    with pytest.raises(MediaPromptError, match=r"row 0: 2 audio item\(s\).*\(audio: 0\)"):
        check_limits(requests, prompts, {})


def test_a_text_models_engine_refuses_rows_with_media_by_name() -> None:
    prompts = audio_prompts()
    requests = [media_request(p) for p in prompts]
    refuse_media(requests[1:2], prompts[1:2], "llama")  # the text row passes
    with pytest.raises(MediaPromptError, match=r"row 0: \{'audio': 2\} .*serves a llama model"):
        refuse_media(requests, prompts, "llama")


def test_qwen2_audio_weights_are_synced_under_the_checkpoint_names() -> None:
    t = torch.zeros(1)
    names = [
        "model.language_model.layers.0.self_attn.q_proj.weight",
        "lm_head.weight",
        "model.audio_tower.conv1.weight",
        "model.multi_modal_projector.linear.weight",
    ]
    got = [n for n, _ in engine_names(((n, t) for n in names), "qwen2_audio")]
    assert got == [
        "language_model.model.layers.0.self_attn.q_proj.weight",
        "language_model.lm_head.weight",
        "audio_tower.conv1.weight",
        "multi_modal_projector.linear.weight",
    ]
    assert [n for n, _ in engine_names(((n, t) for n in names), "qwen2_vl")] == names


def test_placeholders_are_kept_out_of_vllms_distribution() -> None:
    audio = SimpleNamespace(model_type="qwen2_audio", audio_token_id=8)
    vision = SimpleNamespace(model_type="qwen2_vl", image_token_id=5, video_token_id=6)
    assert suppression_bias(audio) == {8: SUPPRESS_BIAS}
    assert suppression_bias(vision) == {5: SUPPRESS_BIAS, 6: SUPPRESS_BIAS}
    assert suppression_bias(SimpleNamespace(model_type="llama")) == {}
    assert suppression_bias(None) == {}
