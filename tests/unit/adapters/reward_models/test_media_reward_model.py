"""Scalar reward models on tiny random Qwen2-VL / Qwen2-Audio backbones: the media reach the
score, decoded and pre-processed payloads score alike, media are never truncated, the export
loads back with the same scores."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from PIL import Image

from lightrft.adapters.datasets.synthetic_audio import sine
from lightrft.adapters.hf.audio_language import AudioLanguageEncoder
from lightrft.adapters.hf.media_reward import HfPairMedia, MediaRewardClassifier
from lightrft.adapters.hf.multimodal_inputs import multimodal_inputs_for
from lightrft.adapters.hf.vision_language import VisionLanguageEncoder
from lightrft.adapters.reward_models import HfScalarRewardModel, PairEncoding, RewardModelCard
from lightrft.domain.types import Completion, PromptRecord, RewardSample
from lightrft.entrypoints.config.loading import load_config
from lightrft.entrypoints.wiring.scalar_reward_models import load_scalar_rm
from tests.helpers.tiny_multimodal import (
    tiny_feature_extractor,
    tiny_image_processor,
    tiny_mm_tokenizer,
    tiny_qwen2_audio,
    tiny_qwen2_vl,
)

CPU = torch.device("cpu")
VL_PROMPT = "<|im_start|>user\n<|vision_start|><|image_pad|><|vision_end|>colour?<|im_end|>\n"
AUDIO_PROMPT = "<|im_start|>user\n<|audio_bos|><|AUDIO|><|audio_eos|>higher?<|im_end|>\n"


def vl_rm(max_length: int | None = None) -> tuple[HfScalarRewardModel, VisionLanguageEncoder]:
    tok, processor = tiny_mm_tokenizer(), tiny_image_processor()
    classifier = MediaRewardClassifier(tiny_qwen2_vl(seed=0), processor, init_seed=0)
    encoder = VisionLanguageEncoder(tok, processor)
    media = HfPairMedia(encoder, multimodal_inputs_for(classifier.model))
    card = RewardModelCard(PairEncoding(max_length=max_length), modality="vision-language")
    return HfScalarRewardModel(classifier, tok, CPU, card=card, media=media), encoder


def image(colour: str) -> Image.Image:
    return Image.new("RGB", (56, 56), colour)


def test_the_image_reaches_the_score_and_rows_are_independent() -> None:
    rm, _ = vl_rm()
    prompts, responses = [VL_PROMPT] * 3, ["red", "red", "red"]
    media = [{"images": [image("red")]}, {"images": [image("blue")]}, {"images": [image("red")]}]
    with torch.no_grad():
        scores = rm.pair_scores(prompts, responses, media)
        # with a text row (no image) in the batch, and alone: the same scores
        text = "<|im_start|>user\ncolour?<|im_end|>\n"
        mixed = rm.pair_scores([text, VL_PROMPT], ["red", "red"], [{}, media[1]])
        alone = rm.pair_scores([text], ["red"])
    assert not torch.isclose(scores[0], scores[1], atol=1e-5)  # only the image differs
    torch.testing.assert_close(scores[0], scores[2])
    torch.testing.assert_close(mixed, torch.stack([alone[0], scores[1]]), atol=1e-5, rtol=1e-5)


def test_an_rl_prompt_encoded_for_the_policy_scores_like_its_decoded_image() -> None:
    rm, encoder = vl_rm()
    tok = tiny_mm_tokenizer()
    raw = PromptRecord(
        "p", VL_PROMPT, tuple(tok(VL_PROMPT)["input_ids"]), multimodal={"images": [image("red")]}
    )
    encoded = encoder.encode(raw)  # what the RL prompt source hands the reward sources
    assert "pixel_values" in encoded.multimodal and "images" not in encoded.multimodal
    response = Completion(0, (1,), "red", "stop")
    rm.onload()
    from_raw = rm.score([RewardSample(raw, response)]).scores
    from_encoded = rm.score([RewardSample(encoded, response)]).scores
    torch.testing.assert_close(from_raw, from_encoded)


def test_media_are_never_truncated_and_placeholders_must_match() -> None:
    rm, _ = vl_rm(max_length=20)  # 24 tokens: the prompt with its 4 image positions + "red"
    with pytest.raises(ValueError, match=r"pair 0 is \d+ tokens with its media expanded, more"):
        rm.pair_scores([VL_PROMPT], ["red"], [{"images": [image("red")]}])
    rm, _ = vl_rm()
    no_pad = "<|im_start|>user\ncolour?<|im_end|>\n"
    with pytest.raises(ValueError, match="pair 0: the prompt holds 0 image placeholder"):
        rm.pair_scores([no_pad], ["red"], [{"images": [image("red")]}])
    with pytest.raises(ValueError, match=r"pair 0: media \['audios'\] for a model that takes"):
        rm.pair_scores([VL_PROMPT], ["red"], [{"audios": [(sine(440, 0.2, 16000), 16000)]}])


def test_export_loads_back_with_the_same_scores(tmp_path: Path) -> None:
    rm, _ = vl_rm()
    tok = tiny_mm_tokenizer()
    tok.save_pretrained(tmp_path / "rm")  # export_hf saves it too; the loader reads it
    with torch.no_grad():
        rm.net.head.weight.normal_()  # a trained-looking head
        want = rm.pair_scores([VL_PROMPT], ["red"], [{"images": [image("blue")]}])
    rm.export_hf(tmp_path / "rm")
    config = load_config(None, ["model.min_pixels=3136", "model.max_pixels=12544"], "grpo")
    loaded = load_scalar_rm(tmp_path / "rm", CPU, config)
    assert loaded.card.modality == "vision-language"
    with torch.no_grad():
        got = loaded.pair_scores([VL_PROMPT], ["red"], [{"images": [image("blue")]}])
    torch.testing.assert_close(got, want)


def test_audio_reaches_the_score() -> None:
    tok, extractor = tiny_mm_tokenizer(), tiny_feature_extractor(chunk_seconds=1)
    classifier = MediaRewardClassifier(tiny_qwen2_audio(seed=0, max_source_positions=50), extractor)
    media = HfPairMedia(
        AudioLanguageEncoder(tok, extractor), multimodal_inputs_for(classifier.model)
    )
    rm = HfScalarRewardModel(classifier, tok, CPU, media=media)
    assert media.audio_sampling_rate == 16000
    clips = [{"audios": [(sine(f, 0.3, 16000), 16000)]} for f in (250.0, 900.0)]
    with torch.no_grad():
        scores = rm.pair_scores([AUDIO_PROMPT] * 2, ["first", "first"], clips)
    assert scores.shape == (2,) and torch.isfinite(scores).all()
    assert not torch.isclose(scores[0], scores[1], atol=1e-6)
