"""InternVL (transformers' ``InternVLForConditionalGeneration``, tiny random from a config):
tiling and placeholder expansion by hand, pixels against a hand-written PIL path, policy and
reference log-probs equal to the model's own forward on each unpadded row (padded and packed),
the HF engine's log-probs equal to the policy's, and what is refused by name."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from importlib.util import find_spec

import numpy as np
import pytest
import torch
from PIL import Image
from torch import Tensor, nn

from lightrft.adapters.hf import HfPolicy, HfReferenceModel, HfRolloutEngine
from lightrft.adapters.hf.internvl import InternVLEncoder, InternVLInputs
from lightrft.adapters.hf.lora import LoraParams
from lightrft.adapters.hf.multimodal_inputs import multimodal_inputs_for
from lightrft.adapters.hf.vision_language import freeze_vision_tower, language_model_lora
from lightrft.adapters.vllm.checks import check_model
from lightrft.application.batching import build_rollout_tensors
from lightrft.domain.types import Completion, PromptRecord, SamplingParams
from tests.helpers.tiny_internvl import (
    TOKENS_PER_TILE,
    internvl_token_id,
    tiny_internvl,
    tiny_internvl_image_processor,
    tiny_internvl_tiles,
    tiny_internvl_tokenizer,
)
from tests.helpers.tiny_multimodal import noise_image

CONTEXT = internvl_token_id("<IMG_CONTEXT>")
START, END = internvl_token_id("<img>"), internvl_token_id("</img>")
RESPONSES = [(40, 41, 42), (50, 51, 52, 53, 1), (60,)]


def _record(tokenizer, uid: str, text: str, images: Sequence) -> PromptRecord:
    parts = [{"type": "image"}] * len(images) + [{"type": "text", "text": text}]
    rendered = tokenizer.apply_chat_template(
        [{"role": "user", "content": parts}], tokenize=False, add_generation_prompt=True
    )
    ids = tuple(tokenizer(rendered, add_special_tokens=False).input_ids)
    media = {"images": list(images)} if images else {}
    return PromptRecord(uid, rendered, ids, multimodal=media, metadata={"where": f"t row {uid}"})


def mixed_prompts() -> list[PromptRecord]:
    """Row 0: a 60x90 and a 40x40 image; row 1: text only; row 2: a 100x50 image."""
    tok = tiny_internvl_tokenizer()
    encoder = InternVLEncoder(tok, tiny_internvl_tiles())
    raw = [
        _record(tok, "0", "compare", [noise_image(60, 90, 1), noise_image(40, 40, 2)]),
        _record(tok, "1", "just some words here", []),
        _record(tok, "2", "what?", [noise_image(100, 50, 3)]),
    ]
    return [encoder.encode(r) for r in raw]


def mixed_batch():
    prompts = mixed_prompts()
    completions = [Completion(i, r, "", "stop") for i, r in enumerate(RESPONSES)]
    return prompts, build_rollout_tensors(prompts, completions, pad_token_id=0).sequences


def direct_logprobs(model: nn.Module, prompt: PromptRecord, response: Sequence[int]) -> Tensor:
    """The model's own forward on one unpadded row (no mask, default positions), float64."""
    ids = torch.tensor([list(prompt.prompt_token_ids) + list(response)])
    pixels = prompt.multimodal.get("pixel_values")
    with torch.no_grad():
        logits = model(input_ids=ids, pixel_values=pixels, use_cache=False).logits[0].double()
    logits[:, CONTEXT] = float("-inf")  # the placeholder is outside the policy's distribution
    logp = torch.log_softmax(logits, -1)[len(prompt.prompt_token_ids) - 1 : -1]
    return logp.gather(-1, torch.tensor(response)[:, None]).squeeze(-1)


def test_images_are_tiled_and_each_placeholder_wrapped_by_hand() -> None:
    first, text, third = mixed_prompts()
    # 60 wide x 90 high (aspect 0.67): of the grids of 1-4 tiles, 1 column x 2 rows (0.5) is
    # closest -> 2 tiles + a thumbnail; 40x40 -> 1x1 (a tie with 2x2 goes to more tiles only
    # when the image is over half their area) -> 1 tile, no thumbnail; 100x50 -> 2x1 + thumb
    assert first.multimodal["image_tiles"].tolist() == [3, 1]
    assert first.multimodal["image_tokens"] == (3 * TOKENS_PER_TILE, TOKENS_PER_TILE)
    assert first.multimodal["pixel_values"].shape == (4, 3, 56, 56)
    assert third.multimodal["image_tiles"].tolist() == [3]
    assert text.multimodal == {} and CONTEXT not in text.prompt_token_ids
    ids = list(first.prompt_token_ids)
    at = ids.index(START)
    assert ids[at : at + 14] == [START, *[CONTEXT] * 12, END]  # "<img>" 3 tiles x 4 "</img>"
    rest = ids[at + 14 :]
    at = rest.index(START)
    assert rest[at : at + 6] == [START, *[CONTEXT] * 4, END]
    assert ids.count(CONTEXT) == 16 and ids.count(START) == ids.count(END) == 2
    assert first.prompt_text.count("<IMG_CONTEXT>") == 2  # one per image in the text


def _normalised(image: Image.Image) -> np.ndarray:
    """(3, H, W): pixels / 255 normalised with the processor's (CLIP) mean and std."""
    processor = tiny_internvl_image_processor()
    mean = np.array(processor.image_mean)[:, None, None]
    std = np.array(processor.image_std)[:, None, None]
    return (np.asarray(image, dtype=np.float64).transpose(2, 0, 1) / 255 - mean) / std


def test_tiles_are_the_bicubic_resize_cut_into_rows_and_columns_then_the_thumbnail() -> None:
    image = noise_image(60, 90, 1)
    first = mixed_prompts()[0].multimodal["pixel_values"].double()
    grid = _normalised(image.resize((56, 112), Image.Resampling.BICUBIC))  # 1 column, 2 rows
    thumb = _normalised(image.resize((56, 56), Image.Resampling.BICUBIC))
    want = torch.tensor(np.stack([grid[:, :56], grid[:, 56:], thumb]))
    torch.testing.assert_close(first[:3], want, atol=1e-5, rtol=0)
    square = _normalised(noise_image(40, 40, 2).resize((56, 56), Image.Resampling.BICUBIC))
    torch.testing.assert_close(first[3], torch.tensor(square), atol=1e-5, rtol=0)


def test_policy_logprobs_equal_the_models_own_forward_padded_and_packed() -> None:
    model = tiny_internvl()
    prompts, batch = mixed_batch()
    inputs = multimodal_inputs_for(model)
    assert isinstance(inputs, InternVLInputs)
    with torch.no_grad():
        padded = HfPolicy(model, multimodal=inputs).forward(batch).logprobs
        packed = HfPolicy(model, multimodal=inputs, packing=True).forward(batch).logprobs
    for row, (prompt, response) in enumerate(zip(prompts, RESPONSES, strict=True)):
        want = direct_logprobs(model, prompt, response)
        torch.testing.assert_close(
            padded[row, : len(response)].double(), want, atol=1e-5, rtol=1e-5
        )
        assert bool((padded[row, len(response) :] == 0).all())  # padding holds 0
    torch.testing.assert_close(packed, padded, atol=1e-5, rtol=1e-5)
    # rows are confined to themselves: the same rows packed in another order score alike
    order = [2, 0, 1]
    completions = [Completion(i, RESPONSES[i], "", "stop") for i in order]
    swapped = build_rollout_tensors(prompts, completions, pad_token_id=0).sequences
    with torch.no_grad():
        again = HfPolicy(model, multimodal=inputs, packing=True).forward(swapped).logprobs
    torch.testing.assert_close(again[[1, 2, 0]], padded, atol=1e-5, rtol=1e-5)


def test_the_images_change_the_logprobs() -> None:
    model = tiny_internvl()
    tok = tiny_internvl_tokenizer()
    encoder = InternVLEncoder(tok, tiny_internvl_tiles())
    rows = [encoder.encode(_record(tok, s, "look", [noise_image(56, 56, s)])) for s in (7, 8)]
    assert rows[0].prompt_token_ids == rows[1].prompt_token_ids
    a, b = (direct_logprobs(model, row, (40, 41)) for row in rows)
    assert not torch.allclose(a, b, atol=1e-6)


def test_reference_equals_policy_and_rows_select() -> None:
    model = tiny_internvl()
    _, batch = mixed_batch()
    inputs = multimodal_inputs_for(model)
    with torch.no_grad():
        policy_lp = HfPolicy(model, multimodal=inputs).forward(batch).logprobs
    reference = HfReferenceModel(tiny_internvl(), torch.device("cpu"), multimodal=inputs)
    torch.testing.assert_close(reference.forward(batch).logprobs, policy_lp)
    part = batch.select(torch.tensor([2, 1]))  # a micro-batch: image row + text row
    torch.testing.assert_close(reference.forward(part).logprobs[0, :1], policy_lp[2, :1])


def test_placeholder_mismatch_names_the_row() -> None:
    model = tiny_internvl()
    _, batch = mixed_batch()
    ids = batch.input_ids.clone()
    ids[2, (ids[2] == CONTEXT).nonzero()[0]] = 50  # row 2 loses one context token
    broken = type(batch)(ids, batch.attention_mask, batch.response_mask, batch.multimodal)
    policy = HfPolicy(model, multimodal=multimodal_inputs_for(model))
    with pytest.raises(ValueError, match=r"row 2 \(t row 2\): 11 image placeholder tokens but"):
        policy.forward(broken)


def test_encoder_refuses_placeholders_that_do_not_match_and_a_tokenizer_without_them() -> None:
    tok = tiny_internvl_tokenizer()
    encoder = InternVLEncoder(tok, tiny_internvl_tiles())
    record = _record(tok, "7", "x", [noise_image(30, 30, 1)])
    two = replace(record, multimodal={"images": [noise_image(30, 30, 1)] * 2})
    with pytest.raises(ValueError, match=r"t row 7: the prompt holds 1 image placeholder"):
        encoder.encode(two)
    video = replace(record, multimodal={**record.multimodal, "videos": [[noise_image(8, 8, 1)]]})
    with pytest.raises(ValueError, match=r"t row 7: the row has videos, but an InternVL model"):
        encoder.encode(video)
    from tests.helpers.tiny_multimodal import tiny_mm_tokenizer  # Qwen's special tokens

    with pytest.raises(ValueError, match=r"no <IMG_CONTEXT>, <img>, </img> token\(s\)"):
        InternVLEncoder(tiny_mm_tokenizer(), tiny_internvl_tiles())


def test_lora_adapts_the_language_model_only_and_the_image_path_can_be_frozen() -> None:
    model = tiny_internvl()
    params = language_model_lora(model, LoraParams(rank=2), train_vision=False)
    assert params.target_modules and all(
        ".language_model." in f".{n}" for n in params.target_modules
    )
    policy = HfPolicy(model, lora=params, multimodal=multimodal_inputs_for(model))
    _, batch = mixed_batch()
    policy.forward(batch).logprobs.sum().backward()  # gradients reach the adapters
    trainable = [p for p in policy.module.parameters() if p.requires_grad]
    assert trainable and all(p.grad is not None for p in trainable)
    full = tiny_internvl()
    assert freeze_vision_tower(full) > 0
    for name, param in full.named_parameters():
        image_path = ".vision_tower." in name or ".multi_modal_projector." in name
        assert param.requires_grad != image_path, name


def test_engine_logprobs_equal_the_policys_and_placeholders_are_never_sampled() -> None:
    model = tiny_internvl()
    inputs = multimodal_inputs_for(model)
    tokenizer = tiny_internvl_tokenizer()
    engine = HfRolloutEngine(model, tokenizer, torch.device("cpu"), multimodal=inputs)
    prompts = mixed_prompts()
    sampling = SamplingParams(n=2, temperature=1.0, max_new_tokens=6, seed=3)
    completions = engine.generate(prompts, sampling)
    assert [c.prompt_index for c in completions] == [0, 0, 1, 1, 2, 2]
    batch = build_rollout_tensors(prompts, completions, pad_token_id=0).sequences
    with torch.no_grad():
        policy_lp = HfPolicy(model, multimodal=inputs).forward(batch).logprobs
    for row, completion in enumerate(completions):
        n = len(completion.token_ids)
        engine_lp = torch.tensor(completion.logprobs)
        torch.testing.assert_close(policy_lp[row, :n], engine_lp, atol=2e-5, rtol=1e-4)
    with torch.no_grad():  # make the context token the model's overwhelming favourite
        model.lm_head.weight[CONTEXT] = 50 * model.lm_head.weight[40]
    out = engine.generate(prompts, SamplingParams(n=2, max_new_tokens=4, seed=0))
    assert all(CONTEXT not in c.token_ids for c in out)


def test_vllm_is_refused_for_internvl_by_name() -> None:
    with pytest.raises(ValueError, match=r"vLLM engine for a internvl model: InternVL on vLLM"):
        check_model(tiny_internvl().config, "float32", "cpu")


@pytest.mark.skipif(find_spec("torchvision") is None, reason="InternVLProcessor needs torchvision")
def test_ids_and_pixels_equal_internvl_processors_own() -> None:
    """Where torchvision imports (not here: skipped), transformers' own ``InternVLProcessor``
    (torchvision image and video processors) gives the encoder's ids and tiles."""
    from transformers import GotOcr2ImageProcessor, InternVLProcessor, InternVLVideoProcessor

    tok = tiny_internvl_tokenizer()
    tok.start_image_token, tok.end_image_token = "<img>", "</img>"
    tok.context_image_token, tok.video_token = "<IMG_CONTEXT>", "<video>"
    tok.start_image_token_id, tok.end_image_token_id = START, END
    tok.context_image_token_id = CONTEXT
    tok.video_token_id = internvl_token_id("<video>")
    processor = InternVLProcessor(
        image_processor=GotOcr2ImageProcessor(size={"height": 56, "width": 56}, max_patches=4),
        tokenizer=tok,
        video_processor=InternVLVideoProcessor(),
        image_seq_length=TOKENS_PER_TILE,
    )
    prompt = mixed_prompts()[0]
    images = [noise_image(60, 90, 1), noise_image(40, 40, 2)]
    raw = _record(tok, "0", "compare", images)
    out = processor(text=[raw.prompt_text], images=images, return_tensors="pt")
    assert out["input_ids"][0].tolist() == list(prompt.prompt_token_ids)
    # torchvision's bicubic resize is not PIL's: the tiles agree to a few levels of 255
    # (0.1 after normalising by std ~0.27 is 7 levels); the tiling itself must be the same
    pixels = prompt.multimodal["pixel_values"]
    assert out["pixel_values"].shape == pixels.shape
    assert float((out["pixel_values"] - pixels).abs().max()) < 0.1
