"""Scalar reward models whose responses are media (text-to-image / text-to-audio
preferences) on tiny random Qwen2-VL and Qwen2-Audio backbones: the response is laid out as
the chat template renders a media part, the loss equals a hand computation on the backbone's
own forward, a few steps lower it, and the export scores a media response alike."""

from __future__ import annotations

import math
from pathlib import Path

import torch
from PIL import Image

from lightrft.adapters.datasets import PromptRenderer
from lightrft.adapters.datasets.reward_sets.media_pairs import media_pair
from lightrft.adapters.datasets.reward_sets.media_responses import (
    media_part_texts,
    readable_media_responses,
)
from lightrft.adapters.datasets.synthetic_audio import sine
from lightrft.adapters.datasets.video_frames import FrameSampling
from lightrft.adapters.hf.audio_language import AudioLanguageEncoder
from lightrft.adapters.hf.media_reward import HfPairMedia, MediaRewardClassifier
from lightrft.adapters.hf.multimodal_inputs import multimodal_inputs_for
from lightrft.adapters.hf.vision_language import VisionVideoEncoder
from lightrft.adapters.reward_models import HfScalarRewardModel, PairEncoding, RewardModelCard
from lightrft.adapters.single_device import SingleDeviceStrategy
from lightrft.application.reward_model_training import (
    RewardModelTrainer,
    RewardTrainParams,
    pair_loss,
    pair_scores,
)
from lightrft.domain.types import Completion, OptimizerParams, PromptRecord, RewardSample
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
IMAGE_PART = "<|vision_start|><|image_pad|><|vision_end|>"


def _vl_rm() -> HfScalarRewardModel:
    tok, processor = tiny_mm_tokenizer(), tiny_image_processor()
    classifier = MediaRewardClassifier(tiny_qwen2_vl(seed=0), processor, init_seed=0)
    media = HfPairMedia(VisionVideoEncoder(tok, processor), multimodal_inputs_for(classifier.model))
    card = RewardModelCard(PairEncoding(), modality="vision-language")
    return HfScalarRewardModel(classifier, tok, CPU, card=card, media=media)


def _image(colour: str) -> Image.Image:
    return Image.new("RGB", (56, 56), colour)


def _image_pairs(n: int) -> list:
    renderer = PromptRenderer(tiny_mm_tokenizer())
    colours = [("red", "blue"), ("green", "yellow")]
    pairs = [
        media_pair(
            f"p{i}",
            f"draw {colours[i % 2][0]}",
            {"images": [_image(colours[i % 2][0])]},
            {"images": [_image(colours[i % 2][1])]},
            renderer,
        )
        for i in range(n)
    ]
    return readable_media_responses(pairs, tiny_mm_tokenizer(), FrameSampling())


def test_the_chat_template_gives_each_media_part_text() -> None:
    assert media_part_texts(tiny_mm_tokenizer()) == {
        "images": IMAGE_PART,
        "videos": "<|vision_start|><|video_pad|><|vision_end|>",
        "audios": "<|audio_bos|><|AUDIO|><|audio_eos|>",
    }
    (pair,) = _image_pairs(1)
    assert pair.chosen == pair.rejected == IMAGE_PART
    assert pair.prompt.endswith("<|im_start|>assistant\n")
    chosen, rejected = pair.response_media("chosen"), pair.response_media("rejected")
    assert chosen["images"][0].getpixel((0, 0)) == (255, 0, 0)
    assert rejected["images"][0].getpixel((0, 0)) == (0, 0, 255)


def _backbone_score(rm: HfScalarRewardModel, prompt: str, image: Image.Image) -> torch.Tensor:
    """The score by hand: the processor's pixels, the pads expanded to the grid's count, the
    HF model's own forward (its own M-RoPE positions), the head on the last hidden state."""
    processor, tok = tiny_image_processor(), tiny_mm_tokenizer()
    out = processor(images=[image], return_tensors="pt")
    pads = int(out["image_grid_thw"].prod()) // processor.merge_size**2
    text = prompt + IMAGE_PART.replace("<|image_pad|>", "<|image_pad|>" * pads)
    ids = torch.tensor([tok(text, add_special_tokens=False)["input_ids"]])
    model = rm.net.classifier.model
    image_pad = tok.convert_tokens_to_ids("<|image_pad|>")
    hidden = model(
        input_ids=ids,
        attention_mask=torch.ones_like(ids),
        mm_token_type_ids=(ids == image_pad).int(),
        pixel_values=out["pixel_values"],
        image_grid_thw=out["image_grid_thw"],
        output_hidden_states=True,
    ).hidden_states[-1]
    return (hidden[0, -1] @ rm.net.classifier.score.weight[0]).float()


def test_image_response_loss_is_the_hand_computed_one() -> None:
    rm = _vl_rm()
    with torch.no_grad():
        rm.net.head.weight.normal_(std=0.5)
    pairs = _image_pairs(2)
    with torch.no_grad():
        chosen, rejected = pair_scores(rm, pairs)
        for loss_type in ("sigmoid", "hps"):
            losses = pair_loss(chosen, rejected, pairs, 0.0, loss_type)
            for i, pair in enumerate(pairs):
                c = _backbone_score(rm, pair.prompt, pair.response_media("chosen")["images"][0])
                r = _backbone_score(rm, pair.prompt, pair.response_media("rejected")["images"][0])
                assert not math.isclose(float(c), float(r), abs_tol=1e-6)  # the image counts
                want = (
                    -torch.nn.functional.logsigmoid(c - r)
                    if loss_type == "sigmoid"
                    else torch.logsumexp(torch.stack([c, r]), 0) - c
                )
                torch.testing.assert_close(losses[i], want, atol=1e-5, rtol=1e-5)


def test_steps_lower_the_loss_and_the_export_scores_a_media_response(tmp_path: Path) -> None:
    torch.manual_seed(0)
    rm = _vl_rm()
    pairs = _image_pairs(4)
    strategy = SingleDeviceStrategy(CPU, OptimizerParams(lr=1e-2, max_grad_norm=1.0))
    strategy.prepare(rm.module)
    params = RewardTrainParams(batch_size=4, micro_batch_size=4, total_steps=6)
    trainer = RewardModelTrainer(rm, strategy, pairs, params)
    losses = [trainer.train_step()["train/loss"] for _ in range(6)]
    assert losses[-1] < losses[0] - 0.05, losses
    with torch.no_grad():
        want, _ = pair_scores(rm, pairs[:1])
    tiny_mm_tokenizer().save_pretrained(tmp_path / "rm")
    rm.export_hf(tmp_path / "rm")
    config = load_config(None, ["model.min_pixels=3136", "model.max_pixels=12544"], "grpo")
    loaded = load_scalar_rm(tmp_path / "rm", CPU, config)
    # scoring time: a served / RL sample whose response is the image (its placeholder text,
    # the image with the prompt's media)
    pair = pairs[0]
    tok = tiny_mm_tokenizer()
    record = PromptRecord(
        "s",
        pair.prompt,
        tuple(tok(pair.prompt)["input_ids"]),
        multimodal=pair.response_media("chosen"),
    )
    got = loaded.score([RewardSample(record, Completion(0, (1,), pair.chosen, "stop"))]).scores
    torch.testing.assert_close(got, want.reshape(-1).float(), atol=1e-5, rtol=1e-5)


def test_audio_response_loss_equals_each_response_scored_alone() -> None:
    tok, extractor = tiny_mm_tokenizer(), tiny_feature_extractor(chunk_seconds=1)
    classifier = MediaRewardClassifier(tiny_qwen2_audio(seed=0, max_source_positions=50), extractor)
    media = HfPairMedia(
        AudioLanguageEncoder(tok, extractor), multimodal_inputs_for(classifier.model)
    )
    card = RewardModelCard(PairEncoding(), modality="audio-language")
    rm = HfScalarRewardModel(classifier, tok, CPU, card=card, media=media)
    renderer = PromptRenderer(tok)
    clips = [(sine(f, 0.3, 16000), 16000) for f in (250.0, 900.0, 500.0, 1200.0)]
    raw = [
        media_pair(f"a{i}", "a beep", {"audios": [clips[i]]}, {"audios": [clips[i + 1]]}, renderer)
        for i in (0, 2)
    ]
    pairs = readable_media_responses(raw, tok, FrameSampling())
    assert pairs[0].chosen == "<|audio_bos|><|AUDIO|><|audio_eos|>"
    with torch.no_grad():
        chosen, rejected = pair_scores(rm, pairs)
        losses = pair_loss(chosen, rejected, pairs, 0.0, "sigmoid")
        for i, pair in enumerate(pairs):
            c, r = (
                rm.pair_scores([pair.prompt], [pair.chosen], [pair.response_media(side)])[0]
                for side in ("chosen", "rejected")
            )
            assert not math.isclose(float(c), float(r), abs_tol=1e-7)
            want = -torch.nn.functional.logsigmoid(c - r)
            torch.testing.assert_close(losses[i], want, atol=1e-5, rtol=1e-5)


def test_video_prompts_read_from_rows_and_encoded_rl_prompts_score_alike(tmp_path: Path) -> None:
    """A preference row with a video (a frame folder, sampled at the spec's fps) scores its
    answers with the video; an RL prompt the policy's encoder processed scores the same."""
    from lightrft.adapters.datasets.preferences import PreferenceSpec, in_memory_preferences
    from tests.helpers.tiny_video import plain_frames, video_record

    tok = tiny_mm_tokenizer()
    for name, colour in (("red", (250, 0, 0)), ("blue", (0, 0, 250))):
        (tmp_path / name).mkdir()
        for i, frame in enumerate(plain_frames([colour] * 4)):
            frame.save(tmp_path / name / f"{i}.png")
    rows = [
        {
            "prompt": "<video> which colour?",
            "video": str(tmp_path / n),
            "chosen": n,
            "rejected": "x",
        }
        for n in ("red", "blue")
    ]
    spec = PreferenceSpec(videos_key="video", frame_sampling=FrameSampling(fps=1.0, max_frames=2))
    pairs, _ = in_memory_preferences(rows, PromptRenderer(tok), spec)
    assert "<|video_pad|>" in pairs[0].prompt
    (video,) = pairs[0].multimodal["videos"]
    assert len(video.frames) == 2  # 4 frames at the default 2 fps, sampled at 1 fps
    rm = _vl_rm()
    with torch.no_grad():
        red, blue = (
            rm.pair_scores([p.prompt], ["red"], [p.response_media("chosen")]) for p in pairs
        )
    assert not torch.isclose(red, blue, atol=1e-6).any()  # the video counts
    record = video_record(tok, "v", " which colour?", videos=[video])
    encoded = rm.net.media.encoder.encode(record)  # what the RL prompt source hands it
    assert "pixel_values_videos" in encoded.multimodal
    answer = Completion(0, (1,), "red", "stop")
    rm.onload()
    from_raw = rm.score([RewardSample(record, answer)]).scores
    from_encoded = rm.score([RewardSample(encoded, answer)]).scores
    torch.testing.assert_close(from_raw, from_encoded)
