"""Vision-language policy (Qwen2-VL, Qwen2.5-VL): response log-probs equal the model's own
forward on each unpadded row, for a padded batch mixing two-image, one-image and text rows."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest
import torch
from torch import Tensor, nn

from lightrft.adapters.hf import HfPolicy, HfReferenceModel
from lightrft.adapters.hf.lora import LoraParams
from lightrft.adapters.hf.multimodal_inputs import multimodal_inputs_for
from lightrft.adapters.hf.vision_language import (
    VisionLanguageEncoder,
    freeze_vision_tower,
    language_model_lora,
)
from lightrft.application.batching import build_rollout_tensors
from lightrft.domain.types import Completion, PromptRecord
from tests.helpers.tiny_multimodal import (
    noise_image,
    tiny_image_processor,
    tiny_mm_tokenizer,
    tiny_qwen2_5_vl,
    tiny_qwen2_vl,
    token_id,
)

FAMILIES: dict[str, Callable[[], nn.Module]] = {
    "qwen2_vl": tiny_qwen2_vl,
    "qwen2_5_vl": tiny_qwen2_5_vl,
}
PAD = token_id("<|image_pad|>")
SUPPRESSED = [PAD, token_id("<|video_pad|>")]


def _chat(tokenizer, images: int, text: str) -> str:
    parts = [{"type": "image"}] * images + [{"type": "text", "text": text}]
    return tokenizer.apply_chat_template(
        [{"role": "user", "content": parts}], tokenize=False, add_generation_prompt=True
    )


def _record(tokenizer, uid: str, text: str, images: Sequence) -> PromptRecord:
    rendered = _chat(tokenizer, len(images), text)
    ids = tuple(tokenizer(rendered, add_special_tokens=False).input_ids)
    media = {"images": list(images)} if images else {}
    return PromptRecord(uid, rendered, ids, multimodal=media, metadata={"where": f"t row {uid}"})


def mixed_prompts() -> list[PromptRecord]:
    """Row 0: two images of different sizes; row 1: text only; row 2: one image."""
    tok = tiny_mm_tokenizer()
    encoder = VisionLanguageEncoder(tok, tiny_image_processor())
    raw = [
        _record(tok, "0", "compare", [noise_image(60, 90, 1), noise_image(40, 40, 2)]),
        _record(tok, "1", "just some words here", []),
        _record(tok, "2", "what?", [noise_image(100, 50, 3)]),
    ]
    return [encoder.encode(r) for r in raw]


RESPONSES = [(40, 41, 42), (50, 51, 52, 53, 1), (60,)]


def mixed_batch():
    prompts = mixed_prompts()
    completions = [Completion(i, r, "", "stop") for i, r in enumerate(RESPONSES)]
    return prompts, build_rollout_tensors(prompts, completions, pad_token_id=0).sequences


def direct_logprobs(model: nn.Module, prompt: PromptRecord, response: Sequence[int]) -> Tensor:
    """The model's own forward on one unpadded row (it computes M-RoPE itself), float64."""
    ids = torch.tensor([list(prompt.prompt_token_ids) + list(response)])
    kwargs = {}
    if prompt.multimodal:
        kwargs = {
            "pixel_values": prompt.multimodal["pixel_values"],
            "image_grid_thw": prompt.multimodal["image_grid_thw"],
            "mm_token_type_ids": (ids == PAD).int(),
        }
    with torch.no_grad():
        logits = model(input_ids=ids, use_cache=False, **kwargs).logits[0].double()
    logits[:, SUPPRESSED] = float("-inf")  # media pads are outside the policy's distribution
    logp = torch.log_softmax(logits, -1)[len(prompt.prompt_token_ids) - 1 : -1]
    return logp.gather(-1, torch.tensor(response)[:, None]).squeeze(-1)


def test_encoder_expands_each_image_to_its_merged_patches() -> None:
    prompts = mixed_prompts()
    # width 60, height 90 -> resized to 56 x 84 (multiples of 28) -> grid h 84/14 = 6,
    # w 56/14 = 4 -> 24 patches / 2**2 = 6 merged tokens; 40x40 -> 56x56 -> 4x4 -> 4 tokens
    first = prompts[0].multimodal
    assert first["image_grid_thw"].tolist() == [[1, 6, 4], [1, 4, 4]]
    assert first["image_tokens"] == (6, 4)
    assert prompts[0].prompt_token_ids.count(PAD) == 10
    third = prompts[2].multimodal
    t, h, w = third["image_grid_thw"][0].tolist()
    assert prompts[2].prompt_token_ids.count(PAD) == t * h * w // 4
    assert first["pixel_values"].shape == (6 * 4 + 4 * 4, 3 * 2 * 14 * 14)  # patches x D
    assert prompts[1].multimodal == {}


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_policy_logprobs_equal_the_models_own_forward(family: str) -> None:
    model = FAMILIES[family]()
    prompts, batch = mixed_batch()
    assert batch.input_ids.shape[0] == 3 and len(batch.multimodal) == 3
    policy = HfPolicy(model, multimodal=multimodal_inputs_for(model))
    with torch.no_grad():
        got = policy.forward(batch).logprobs
    for row, (prompt, response) in enumerate(zip(prompts, RESPONSES, strict=True)):
        want = direct_logprobs(model, prompt, response)
        torch.testing.assert_close(got[row, : len(response)].double(), want, atol=1e-5, rtol=1e-5)
        assert bool((got[row, len(response) :] == 0).all())  # padding holds 0


def test_reference_equals_policy_and_rows_select() -> None:
    model = tiny_qwen2_vl()
    _, batch = mixed_batch()
    inputs = multimodal_inputs_for(model)
    with torch.no_grad():
        policy_lp = HfPolicy(model, multimodal=inputs).forward(batch).logprobs
    reference = HfReferenceModel(tiny_qwen2_vl(), torch.device("cpu"), multimodal=inputs)
    torch.testing.assert_close(reference.forward(batch).logprobs, policy_lp)
    part = batch.select(torch.tensor([2, 1]))  # a micro-batch: image row + text row
    torch.testing.assert_close(reference.forward(part).logprobs[0, :1], policy_lp[2, :1])


def test_placeholder_mismatch_names_the_row() -> None:
    model = tiny_qwen2_vl()
    _, batch = mixed_batch()
    ids = batch.input_ids.clone()
    ids[2, (ids[2] == PAD).nonzero()[0]] = 50  # row 2 loses one image pad
    broken = type(batch)(ids, batch.attention_mask, batch.response_mask, batch.multimodal)
    policy = HfPolicy(model, multimodal=multimodal_inputs_for(model))
    with pytest.raises(ValueError, match=r"row 2 \(t row 2\): \d+ image placeholder tokens"):
        policy.forward(broken)


def test_lora_adapts_the_language_model_only_and_vision_can_be_frozen() -> None:
    model = tiny_qwen2_vl()
    params = language_model_lora(model, LoraParams(rank=2), train_vision=False)
    policy = HfPolicy(model, lora=params, multimodal=multimodal_inputs_for(model))
    trainable = [n for n, p in policy.module.named_parameters() if p.requires_grad]
    assert trainable and all("lora_" in n and "language_model" in n for n in trainable)
    _, batch = mixed_batch()
    policy.forward(batch).logprobs.sum().backward()  # gradients reach the adapters
    assert all(p.grad is not None for n, p in policy.module.named_parameters() if p.requires_grad)
    full = tiny_qwen2_vl()
    frozen = freeze_vision_tower(full)
    assert frozen > 0
    assert all(not p.requires_grad for n, p in full.named_parameters() if "visual" in n)
    assert any(p.requires_grad for n, p in full.named_parameters() if "language_model" in n)


def test_images_are_resized_within_min_and_max_pixels() -> None:
    tok = tiny_mm_tokenizer()
    encoder = VisionLanguageEncoder(tok, tiny_image_processor())  # 28*28*4 .. 28*28*16 pixels
    big = encoder.encode(_record(tok, "big", "x", [noise_image(900, 700, 5)]))
    small = encoder.encode(_record(tok, "small", "x", [noise_image(10, 12, 6)]))
    # merged tokens = pixels / 28**2 after resizing: at most 16 and at least 4
    assert 4 <= small.multimodal["image_tokens"][0] <= big.multimodal["image_tokens"][0] <= 16
    assert big.multimodal["image_tokens"][0] >= 12  # a large image uses most of the budget


def test_encoder_refuses_placeholders_that_do_not_match_the_images() -> None:
    tok = tiny_mm_tokenizer()
    encoder = VisionLanguageEncoder(tok, tiny_image_processor())
    record = _record(tok, "7", "x", [noise_image(30, 30, 1)])
    two_images = PromptRecord(
        record.uid,
        record.prompt_text,
        record.prompt_token_ids,
        multimodal={"images": [noise_image(30, 30, 1), noise_image(30, 30, 2)]},
        metadata=record.metadata,
    )
    expected = (
        r"t row 7: the prompt holds 1 image placeholder token\(s\) \(id \d+\) but "
        r"multimodal\['images'\] has 2 item\(s\); expected one placeholder per item"
    )
    with pytest.raises(ValueError, match=expected):
        encoder.encode(two_images)
