"""A scalar reward model on the tiny Qwen2.5-Omni thinker: a prompt with a clip, an image and
a video in one message reaches the score through the thinker's own encoders.

The reward network's hidden states equal the text model's output inside the thinker's own
forward (captured by a hook; the thinker merges the media and computes its M-RoPE positions
itself); each medium changes the score; an RL prompt the policy's encoder processed scores
like its decoded media; the export loads back with the same scores and the thinker's weight
names; a gradient step reaches the text model and the audio encoder.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors.torch import load_file

from lightrft.adapters.hf.media_reward import HfPairMedia, MediaRewardClassifier
from lightrft.adapters.hf.multimodal_inputs import multimodal_inputs_for
from lightrft.adapters.hf.omni import OmniEncoder
from lightrft.adapters.reward_models import HfScalarRewardModel, PairEncoding, RewardModelCard
from lightrft.adapters.reward_models.encoding import pad_rows, pair_rows
from lightrft.adapters.reward_models.media import expand_media_rows
from lightrft.domain.modality import VideoFrames
from lightrft.domain.types import Completion, PromptRecord, RewardSample
from lightrft.entrypoints.config.loading import load_config
from lightrft.entrypoints.wiring.scalar_reward_models import load_scalar_rm
from tests.helpers.tiny_multimodal import noise_image, tiny_feature_extractor, tiny_image_processor
from tests.helpers.tiny_omni import tiny_omni_thinker, tiny_omni_tokenizer
from tests.helpers.tiny_video import colour_frames

CPU = torch.device("cpu")
RATE = 16_000
PARTS = [
    {"type": "audio"},
    {"type": "image"},
    {"type": "text", "text": "then"},
    {"type": "video"},
    {"type": "text", "text": "which?"},
]


def _prompt() -> str:
    chat = [{"role": "user", "content": PARTS}]
    text: str = tiny_omni_tokenizer().apply_chat_template(
        chat, tokenize=False, add_generation_prompt=True
    )
    return text


def _media(freq: float = 440.0, image_seed: int = 1, video_seed: int = 4) -> dict[str, Any]:
    clip = (0.4 * np.sin(2 * np.pi * freq * np.arange(RATE // 2) / RATE)).astype(np.float32)
    video = VideoFrames(tuple(colour_frames(3, 56, 84, seed=video_seed)), 2.0)
    return {
        "audios": [(clip, RATE)],
        "images": [noise_image(60, 90, image_seed)],
        "videos": [video],
    }


def _encoder() -> OmniEncoder:
    return OmniEncoder(tiny_omni_tokenizer(), tiny_image_processor(), tiny_feature_extractor(1))


def omni_rm(seed: int = 0) -> HfScalarRewardModel:
    encoder = _encoder()
    classifier = MediaRewardClassifier(tiny_omni_thinker(seed), encoder.processor, init_seed=0)
    media = HfPairMedia(encoder, multimodal_inputs_for(classifier.model))
    card = RewardModelCard(PairEncoding(), modality="omni")
    return HfScalarRewardModel(classifier, tiny_omni_tokenizer(), CPU, card=card, media=media)


def test_hidden_states_are_the_thinkers_own() -> None:
    rm = omni_rm()
    tok = tiny_omni_tokenizer()
    rows = pair_rows(tok, [_prompt()], ["first"], rm.card.encoding)
    rows, payloads = expand_media_rows(rows, [_media()], rm.net.media, None)
    ids, mask = pad_rows(tok, rows, "right")
    with torch.no_grad():
        got = rm.net.hidden(ids, mask, payloads)
    thinker = rm.net.classifier.model
    captured: list[torch.Tensor] = []
    hook = thinker.model.register_forward_hook(
        lambda _m, _a, out: captured.append(out.last_hidden_state)
    )
    p = payloads[0]
    with torch.no_grad():
        thinker(
            input_ids=ids,
            attention_mask=mask,
            pixel_values=p["pixel_values"],
            image_grid_thw=p["image_grid_thw"],
            pixel_values_videos=p["pixel_values_videos"],
            video_grid_thw=p["video_grid_thw"],
            video_second_per_grid=p["second_per_grid_ts"],
            input_features=p["input_features"],
            feature_attention_mask=p["feature_attention_mask"],
            use_cache=False,
        )
    hook.remove()
    diff = float((got - captured[0]).abs().max())
    print(f"reward backbone vs thinker's text model output: max |diff| {diff:.2e}")
    assert diff <= 1e-5


def test_every_medium_reaches_the_score_and_rows_are_independent() -> None:
    rm = omni_rm()
    prompt = _prompt()
    variants = [_media(), _media(freq=900.0), _media(image_seed=7), _media(video_seed=9)]
    with torch.no_grad():
        scores = rm.pair_scores([prompt] * 4, ["first"] * 4, variants)
        text = "<|im_start|>user\nwhich?<|im_end|>\n<|im_start|>assistant\n"
        mixed = rm.pair_scores([text, prompt], ["first", "first"], [{}, variants[0]])
        alone = rm.pair_scores([text], ["first"])
    for other in (1, 2, 3):  # only the clip, the image, the video differs
        assert not torch.isclose(scores[0], scores[other], atol=1e-6), other
    torch.testing.assert_close(mixed, torch.stack([alone[0], scores[0]]), atol=1e-5, rtol=1e-5)


def test_an_rl_prompt_encoded_for_the_policy_scores_like_its_decoded_media() -> None:
    rm = omni_rm()
    tok = tiny_omni_tokenizer()
    prompt = _prompt()
    raw = PromptRecord("p", prompt, tuple(tok(prompt)["input_ids"]), multimodal=_media())
    encoded = _encoder().encode(raw)
    assert "pixel_values_videos" in encoded.multimodal and "audios" not in encoded.multimodal
    response = Completion(0, (1,), "first", "stop")
    rm.onload()
    from_raw = rm.score([RewardSample(raw, response)]).scores
    from_encoded = rm.score([RewardSample(encoded, response)]).scores
    torch.testing.assert_close(from_raw, from_encoded)


def test_export_loads_back_with_the_same_scores_and_weight_names(tmp_path: Path) -> None:
    rm = omni_rm()
    tiny_omni_tokenizer().save_pretrained(tmp_path / "rm")
    with torch.no_grad():
        rm.net.head.weight.normal_()  # a trained-looking head
        want = rm.pair_scores([_prompt()], ["first"], [_media()])
    rm.export_hf(tmp_path / "rm")
    saved = load_file(str(tmp_path / "rm" / "model.safetensors"))
    thinker_names = set(tiny_omni_thinker().state_dict())
    assert set(saved) <= thinker_names and any(k.startswith("audio_tower.") for k in saved)
    config = load_config(None, ["model.min_pixels=3136", "model.max_pixels=12544"], "grpo")
    loaded = load_scalar_rm(tmp_path / "rm", CPU, config)
    assert loaded.card.modality == "omni"
    with torch.no_grad():
        got = loaded.pair_scores([_prompt()], ["first"], [_media()])
    torch.testing.assert_close(got, want)


def test_a_gradient_step_reaches_the_text_model_and_the_audio_encoder() -> None:
    rm = omni_rm()
    rm.pair_scores([_prompt()], ["first"], [_media()]).sum().backward()
    grads = {n: p.grad for n, p in rm.net.named_parameters() if p.grad is not None}
    for part in ("backbone.model.layers.", "backbone.audio_tower.", "head."):
        assert any(n.startswith(part) and g.abs().sum() > 0 for n, g in grads.items()), part
