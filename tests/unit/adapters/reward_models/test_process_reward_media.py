"""A process reward model on a tiny random Qwen2-VL: the prompt's image reaches the step
scores, the expanded placeholders shift the step ends (a text row and an image row in one
batch score as they do alone), and a training step's gradient reaches the weights."""

from __future__ import annotations

import pytest
import torch
from PIL import Image

from lightrft.adapters.hf.media_reward import HfPairMedia
from lightrft.adapters.hf.multimodal_inputs import multimodal_inputs_for
from lightrft.adapters.hf.vision_language import VisionLanguageEncoder
from lightrft.adapters.reward_models.encoding import PairEncoding
from lightrft.adapters.reward_models.process import HfProcessRewardModel
from lightrft.adapters.reward_models.process_card import ProcessRewardCard
from lightrft.domain.process_rewards import StepLabelledExample, step_classification_loss
from lightrft.domain.types import Completion, PromptRecord, RewardSample
from tests.helpers.threads import one_torch_thread
from tests.helpers.tiny_multimodal import tiny_image_processor, tiny_mm_tokenizer, tiny_qwen2_vl

CPU = torch.device("cpu")
VL_PROMPT = "<|im_start|>user\n<|vision_start|><|image_pad|><|vision_end|>colour?<|im_end|>\n"
TEXT_PROMPT = "<|im_start|>user\ncolour?<|im_end|>\n"
CARD = ProcessRewardCard(separator="\n", encoding=PairEncoding(), modality="vision-language")

_one_thread = pytest.fixture(autouse=True)(one_torch_thread)


def vl_prm() -> HfProcessRewardModel:
    tok, processor = tiny_mm_tokenizer(), tiny_image_processor()
    lm = tiny_qwen2_vl(seed=0)
    media = HfPairMedia(VisionLanguageEncoder(tok, processor), multimodal_inputs_for(lm))
    return HfProcessRewardModel(lm, tok, CPU, card=CARD, media=media)


def sample(prompt: str, images: list[Image.Image] | None) -> RewardSample:
    record = PromptRecord("p", prompt, (1,), multimodal={"images": images} if images else {})
    return RewardSample(record, Completion(0, (1,), "it is\nred\n", "stop"))


def test_the_image_reaches_the_step_scores_and_rows_are_independent() -> None:
    model = vl_prm()
    red, blue = Image.new("RGB", (56, 56), "red"), Image.new("RGB", (56, 56), "blue")
    batch = model.step_scores(
        [sample(VL_PROMPT, [red]), sample(VL_PROMPT, [blue]), sample(TEXT_PROMPT, None)]
    )
    alone = [
        model.step_scores([sample(VL_PROMPT, [red])])[0],
        model.step_scores([sample(TEXT_PROMPT, None)])[0],
    ]
    assert [len(s) for s in batch] == [2, 2, 2]
    assert not torch.allclose(batch[0], batch[1], atol=1e-6)  # only the image differs
    torch.testing.assert_close(batch[0], alone[0], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(batch[2], alone[1], atol=1e-5, rtol=1e-5)


def test_a_training_step_with_images_reaches_the_weights() -> None:
    model = vl_prm()
    red = Image.new("RGB", (56, 56), "red")
    examples = [
        StepLabelledExample(VL_PROMPT, ("it is", "red"), (1.0, 1.0), {"images": [red]}),
        StepLabelledExample(TEXT_PROMPT, ("it is", "blue"), (1.0, 0.0)),
    ]
    positive, negative = model.example_logits(examples)
    assert positive.shape == negative.shape == (4,)
    step_classification_loss(
        positive, negative, torch.tensor([1.0, 1.0, 1.0, 0.0])
    ).sum().backward()
    grads = [p.grad for p in model.module.parameters() if p.grad is not None]
    assert grads and any(float(g.abs().sum()) > 0 for g in grads)


def test_the_step_ends_follow_the_expanded_placeholders() -> None:
    model = vl_prm()
    row = model.encode(VL_PROMPT, ["it is", "red"])
    red = Image.new("RGB", (56, 56), "red")
    assert model.media is not None
    expanded, _ = model.media.expand(row.ids, {"images": [red]}, "row 0")
    shift = len(expanded) - len(row.ids)
    assert shift > 0  # one placeholder became several image positions
    newline = tiny_mm_tokenizer()("\n", add_special_tokens=False)["input_ids"]
    assert [expanded[e + shift] for e in row.ends] == newline * 2
