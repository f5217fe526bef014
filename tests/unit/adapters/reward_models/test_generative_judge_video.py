"""A vision-language generative judge on a video row (tiny random Qwen2-VL): the judge
prompt holds one video placeholder expanded by the judge's own encoder, the frames reach the
generate call, and another video changes the verdict."""

from __future__ import annotations

import pytest
import torch

from lightrft.adapters.engine_parts.source_media import source_media
from lightrft.adapters.hf import HfRolloutEngine
from lightrft.adapters.hf.multimodal_inputs import multimodal_inputs_for
from lightrft.adapters.hf.vision_language import VisionVideoEncoder
from lightrft.adapters.reward_models.generative import HfGenerativeRewardModel
from lightrft.adapters.reward_models.verdict import ScoreVerdict
from lightrft.domain.modality import VideoFrames
from lightrft.domain.types import Completion, PromptRecord, RewardSample
from tests.helpers.threads import one_torch_thread
from tests.helpers.tiny_multimodal import (
    tiny_image_processor,
    tiny_mm_tokenizer,
    tiny_qwen2_vl,
    token_id,
)
from tests.helpers.tiny_video import plain_frames, video_record
from tests.unit.adapters.reward_models.test_generative_judge_media import TEMPLATE, Recording

CPU = torch.device("cpu")
VIDEO_PAD, VISION_START = token_id("<|video_pad|>"), token_id("<|vision_start|>")

_one_thread = pytest.fixture(autouse=True)(one_torch_thread)


def video_row(colour: tuple[int, int, int]) -> PromptRecord:
    """An RL prompt with a 4-frame video, encoded by the policy's encoder."""
    tok = tiny_mm_tokenizer()
    video = VideoFrames(tuple(plain_frames([colour] * 4)), fps=2.0)
    raw = video_record(tok, "row-3", "What moves?", videos=[video])
    return VisionVideoEncoder(tok, tiny_image_processor()).encode(raw)


def test_a_video_row_reaches_the_judge_and_changes_its_verdict() -> None:
    tok, model = tiny_mm_tokenizer(), tiny_qwen2_vl(seed=0)
    recording = Recording(HfRolloutEngine(model, tok, CPU, multimodal=multimodal_inputs_for(model)))
    judge = HfGenerativeRewardModel(
        recording,  # type: ignore[arg-type]
        tok,
        ScoreVerdict(10),
        template=TEMPLATE,
        max_new_tokens=4,
        media_encoder=VisionVideoEncoder(tok, tiny_image_processor()),
    )
    red, blue = video_row((250, 0, 0)), video_row((0, 0, 250))
    for row in (red, red, blue):
        judge.score([RewardSample(row, Completion(0, (2,), "a dot", "stop"))])
    prompt = recording.prompts[0]
    ids = prompt.prompt_token_ids
    assert ids.count(VISION_START) == 1  # the policy's markup left; the judge's one part
    assert ids.count(VIDEO_PAD) == sum(prompt.multimodal["video_tokens"]) > 0
    assert "pixel_values_videos" in prompt.multimodal and "What moves?" in prompt.prompt_text
    (media,) = source_media(prompt.multimodal)
    assert media.kind == "video" and media.items == source_media(red.multimodal)[0].items
    first, again, other = recording.completions
    assert first.token_ids == again.token_ids
    differs = first.token_ids != other.token_ids or not torch.allclose(
        torch.tensor(first.logprobs), torch.tensor(other.logprobs), atol=1e-5
    )
    assert differs  # only the video differs
