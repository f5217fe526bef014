"""A vision-language generative judge on a tiny random Qwen2-VL: the judge prompt carries the
row's images re-encoded by the judge's own encoder, the images reach the generate call and
change the verdict, and a text judge refuses an image row by name; the
``generative_rm`` wiring builds such a judge from a saved directory."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import torch
from PIL import Image
from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

from lightrft.adapters.engine_parts.source_media import source_media
from lightrft.adapters.hf import HfRolloutEngine
from lightrft.adapters.hf.multimodal_inputs import multimodal_inputs_for
from lightrft.adapters.hf.vision_language import VisionLanguageEncoder
from lightrft.adapters.reward_models.generative import HfGenerativeRewardModel
from lightrft.adapters.reward_models.verdict import ScoreVerdict
from lightrft.domain.types import Completion, PromptRecord, RewardSample, SamplingParams
from tests.helpers.threads import one_torch_thread
from tests.helpers.tiny_multimodal import (
    save_tiny_vl_model,
    tiny_image_processor,
    tiny_mm_tokenizer,
    tiny_qwen2_vl,
    token_id,
)

CPU = torch.device("cpu")
POLICY_PROMPT = (
    "<|im_start|>user\n<|vision_start|><|image_pad|><|vision_end|>What colour?<|im_end|>\n"
    "<|im_start|>assistant\n"
)
TEMPLATE = "Q: {prompt}\nA: {response}\nScore: X/10"
PAD, VISION_START = token_id("<|image_pad|>"), token_id("<|vision_start|>")

_one_thread = pytest.fixture(autouse=True)(one_torch_thread)


class Recording:
    """A ``RolloutEngine`` that keeps what each ``generate`` call got and gave."""

    def __init__(self, engine: Any) -> None:
        self.engine = engine
        self.prompts: list[PromptRecord] = []
        self.completions: list[Completion] = []

    def generate(self, prompts: Sequence[PromptRecord], sampling: SamplingParams) -> Any:
        out = self.engine.generate(prompts, sampling)
        self.prompts += list(prompts)
        self.completions += list(out)
        return out


def policy_row(colour: str) -> PromptRecord:
    """An RL prompt encoded by a policy whose processor gives 16 positions to a 56x56 image
    (the judge's gives 4)."""
    tok = tiny_mm_tokenizer()
    policy = VisionLanguageEncoder(
        tok, Qwen2VLImageProcessorPil(min_pixels=28 * 28 * 16, max_pixels=28 * 28 * 16)
    )
    raw = PromptRecord(
        "row-7",
        POLICY_PROMPT,
        tuple(tok(POLICY_PROMPT)["input_ids"]),
        multimodal={"images": [Image.new("RGB", (56, 56), colour)]},
        metadata={"where": "train.jsonl:7"},
    )
    return policy.encode(raw)


def vl_judge() -> tuple[HfGenerativeRewardModel, Recording, VisionLanguageEncoder]:
    tok, model = tiny_mm_tokenizer(), tiny_qwen2_vl(seed=0)
    engine = HfRolloutEngine(model, tok, CPU, multimodal=multimodal_inputs_for(model))
    recording = Recording(engine)
    encoder = VisionLanguageEncoder(tok, tiny_image_processor())
    rm = HfGenerativeRewardModel(
        recording,  # type: ignore[arg-type]
        tok,
        ScoreVerdict(10),
        template=TEMPLATE,
        max_new_tokens=4,
        media_encoder=encoder,
    )
    return rm, recording, encoder


def answer(row: PromptRecord) -> RewardSample:
    return RewardSample(row, Completion(0, (2,), "red", "stop"))


def test_the_judge_prompt_holds_one_placeholder_run_per_image_at_the_judges_count() -> None:
    rm, recording, encoder = vl_judge()
    row = policy_row("red")
    assert row.multimodal["image_tokens"] == (16,)  # the policy's count
    rm.score([answer(row)])
    (prompt,) = recording.prompts
    ids = prompt.prompt_token_ids
    starts = [i for i, t in enumerate(ids) if t == PAD and ids[i - 1] != PAD]
    assert len(starts) == 1 and ids.count(PAD) == 4  # one run, the judge's 4 positions
    assert ids.count(VISION_START) == 1  # the policy's markup left the prompt text
    assert "What colour?" in prompt.prompt_text and "A: red" in prompt.prompt_text
    assert prompt.multimodal["image_tokens"] == (4,)
    (media,) = source_media(prompt.multimodal)
    assert media.items == source_media(row.multimodal)[0].items  # the row's own image
    pixels = encoder.process(list(media.items), "check").tensors["pixel_values"]
    torch.testing.assert_close(prompt.multimodal["pixel_values"], pixels)


def test_another_image_changes_the_verdict() -> None:
    rm, recording, _ = vl_judge()
    rm.score([answer(policy_row("red"))])
    rm.score([answer(policy_row("red"))])
    rm.score([answer(policy_row("blue"))])
    red, red_again, blue = recording.completions
    assert red.token_ids == red_again.token_ids
    torch.testing.assert_close(red.logprobs, red_again.logprobs)
    differs = red.token_ids != blue.token_ids or not torch.allclose(
        torch.tensor(red.logprobs), torch.tensor(blue.logprobs), atol=1e-5
    )
    assert differs  # only the image differs between the two rows


def test_a_text_judge_refuses_an_image_row_by_name_unless_told_to_ignore_media() -> None:
    tok = tiny_mm_tokenizer()
    text_judge = HfGenerativeRewardModel(None, tok, ScoreVerdict(10), template=TEMPLATE)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"train\.jsonl:7: the prompt has 1 image\(s\) but judge"):
        text_judge.score([answer(policy_row("red"))])
    lenient = HfGenerativeRewardModel(
        None,  # type: ignore[arg-type]
        tok,
        ScoreVerdict(10),
        template=TEMPLATE,
        ignore_media=True,
    )
    prompt = lenient.judge_prompt(answer(policy_row("red")))
    assert not prompt.multimodal and "What colour?" in prompt.prompt_text


def test_a_vision_language_judge_builds_from_config_and_judges_an_image_row(
    tmp_path: Path,
) -> None:
    from lightrft.entrypoints.config.loading import ConfigError, load_config
    from lightrft.entrypoints.wiring import reward_model_builders  # noqa: F401  (registers)
    from lightrft.entrypoints.wiring.registries import REWARD_SOURCES, BuildContext, build

    judge_dir = save_tiny_vl_model(tmp_path / "judge", byte_level=True)
    fields = {"type": "generative_rm", "path": str(judge_dir), "max_new_tokens": 4}
    vl = {**fields, "modality": "vision-language"}
    on_vllm = [{**vl, "name": "b", "engine": "vllm"}]
    with pytest.raises(ConfigError, match=r"reward.sources.0: .*judge runs on engine hf only"):
        load_config(overrides={"reward.sources": on_vllm})  # refused before anything loads
    config = load_config(overrides={"reward.sources": [{**vl, "name": "a"}, fields]})
    context = BuildContext(config, tmp_path, CPU, None, lambda: None)  # type: ignore[arg-type,return-value]
    hf, text = config.reward.sources
    judge = build(REWARD_SOURCES, hf, context)
    result = judge.score([answer(policy_row("red"))])
    assert result.scores.shape == (1,) and judge.judge_prompt(answer(policy_row("red"))).multimodal
    assert text.modality == "text" and not text.ignore_media  # type: ignore[attr-defined]
