"""Videos on Qwen2-VL / Qwen2.5-VL: temporal patching of PIL-processed frames, grids and
placeholder counts by hand, M-RoPE's time axis, and response log-probs equal to the model's
own forward for a padded batch mixing video, image + video and text rows."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pytest
import torch
from torch import Tensor, nn

from lightrft.adapters.hf import HfPolicy, HfRolloutEngine
from lightrft.adapters.hf.multimodal_inputs import multimodal_inputs_for
from lightrft.adapters.hf.video_language import VideoEncoder, frame_patches
from lightrft.adapters.hf.vision_language import VisionVideoEncoder
from lightrft.application.batching import build_rollout_tensors
from lightrft.domain.modality import VideoFrames
from lightrft.domain.types import Completion, PromptRecord, SamplingParams
from tests.helpers.tiny_multimodal import (
    noise_image,
    tiny_image_processor,
    tiny_mm_tokenizer,
    tiny_qwen2_5_vl,
    tiny_qwen2_vl,
    token_id,
)
from tests.helpers.tiny_video import colour_frames, video_record

FAMILIES: dict[str, Callable[[], nn.Module]] = {
    "qwen2_vl": tiny_qwen2_vl,
    "qwen2_5_vl": tiny_qwen2_5_vl,
}
IMAGE_PAD, VIDEO_PAD = token_id("<|image_pad|>"), token_id("<|video_pad|>")
SUPPRESSED = [IMAGE_PAD, VIDEO_PAD]
MEAN = np.array([0.48145466, 0.4578275, 0.40821073])  # OPENAI_CLIP_MEAN / STD: the
STD = np.array([0.26862954, 0.26130258, 0.27577711])  # Qwen2-VL processors' defaults


def processor_patchify(frames: Sequence, patch: int = 14, merge: int = 2, tps: int = 2) -> Tensor:
    """``Qwen2VLVideoProcessor.patchify`` written out from transformers' source (frames
    already at a multiple of 28: no resize), on frames normalised by hand."""
    video = np.stack([(np.asarray(f, dtype=np.float64) / 255 - MEAN) / STD for f in frames])
    video = torch.tensor(video).permute(0, 3, 1, 2)[None]  # [1, F, C, H, W]
    if pad := -video.shape[1] % tps:
        video = torch.cat([video, video[:, -1:].expand(-1, pad, -1, -1, -1)], dim=1)
    _, count, channels, height, width = video.shape
    t, h, w = count // tps, height // patch, width // patch
    view = video.reshape(1, t, tps, channels, h // merge, merge, patch, w // merge, merge, patch)
    view = view.permute(0, 1, 4, 7, 5, 8, 3, 2, 6, 9)
    return view.reshape(t * h * w, channels * tps * patch * patch)


def mixed_prompts() -> list[PromptRecord]:
    """Row 0: a 5-frame video at 2 fps; row 1: text; row 2: an image and a 4-frame video
    at 1 fps of another size."""
    tok = tiny_mm_tokenizer()
    encoder = VisionVideoEncoder(tok, tiny_image_processor())
    five = VideoFrames(tuple(colour_frames(5, 56, 84, seed=1)), 2.0)
    four = VideoFrames(tuple(colour_frames(4, 84, 56, seed=2)), 1.0)
    raw = [
        video_record(tok, "0", "which way?", videos=[five]),
        video_record(tok, "1", "only some words"),
        video_record(tok, "2", "and now?", videos=[four], images=[noise_image(40, 40, 3)]),
    ]
    return [encoder.encode(r) for r in raw]


RESPONSES = [(40, 41, 42), (50, 51, 52, 53, 1), (60,)]


def direct_logprobs(model: nn.Module, prompt: PromptRecord, response: Sequence[int]) -> Tensor:
    """The model's own forward on one unpadded row (it computes M-RoPE itself), float64."""
    ids = torch.tensor([list(prompt.prompt_token_ids) + list(response)])
    payload = prompt.multimodal
    kwargs = {"mm_token_type_ids": (ids == IMAGE_PAD).int() + 2 * (ids == VIDEO_PAD).int()}
    for key in ("pixel_values", "image_grid_thw", "pixel_values_videos", "video_grid_thw"):
        if key in payload:
            kwargs[key] = payload[key]
    if "second_per_grid_ts" in payload and model.config.model_type == "qwen2_5_vl":
        kwargs["second_per_grid_ts"] = payload["second_per_grid_ts"]
    with torch.no_grad():
        logits = model(input_ids=ids, use_cache=False, **kwargs).logits[0].double()
    logits[:, SUPPRESSED] = float("-inf")
    logp = torch.log_softmax(logits, -1)[len(prompt.prompt_token_ids) - 1 : -1]
    return logp.gather(-1, torch.tensor(response)[:, None]).squeeze(-1)


def test_frames_are_paired_like_the_video_processor() -> None:
    frames = colour_frames(3, 56, 84, seed=5)  # odd: the last frame is repeated
    values, grid = frame_patches(frames, tiny_image_processor())
    # 56 x 84 is within 3136 .. 12544 pixels and a multiple of 28: no resize; 3 frames ->
    # 2 temporal patches, 84 / 14 = 6 rows, 56 / 14 = 4 columns of patches
    assert grid.tolist() == [[2, 6, 4]]
    assert values.shape == (2 * 6 * 4, 3 * 2 * 14 * 14)
    torch.testing.assert_close(values.double(), processor_patchify(frames), atol=1e-5, rtol=0)


def test_frame_patches_equal_the_video_processor_where_torchvision_imports() -> None:
    pytest.importorskip("torchvision")
    from transformers.models.qwen2_vl.video_processing_qwen2_vl import Qwen2VLVideoProcessor

    frames = colour_frames(3, 56, 84, seed=5)
    video = torch.tensor(np.stack([np.asarray(f) for f in frames])).permute(0, 3, 1, 2)
    processor = Qwen2VLVideoProcessor(min_pixels=28 * 28 * 4, max_pixels=28 * 28 * 16)
    out = processor(videos=[video], return_tensors="pt")
    values, grid = frame_patches(frames, tiny_image_processor())
    assert grid.tolist() == out["video_grid_thw"].tolist()
    torch.testing.assert_close(values, out["pixel_values_videos"], atol=1e-5, rtol=0)


def test_encoder_expands_each_video_to_its_merged_patches() -> None:
    prompts = mixed_prompts()
    first, third = prompts[0].multimodal, prompts[2].multimodal
    # 5 frames -> 3 temporal patches (last repeated); 56 wide x 84 high -> 6 x 4 patches;
    # 3 * 6 * 4 / 2**2 = 18 video pads
    assert first["video_grid_thw"].tolist() == [[3, 6, 4]]
    assert first["video_tokens"] == (18,) and prompts[0].prompt_token_ids.count(VIDEO_PAD) == 18
    assert first["second_per_grid_ts"].tolist() == [1.0]  # 2 frames a patch at 2 fps
    assert first["media_cost"] == 3 * 6 * 4
    # 4 frames at 1 fps -> 2 patches of 4 x 6 (84 wide, 56 high) -> 12 pads; image 40x40 ->
    # 56x56 -> 4 x 4 patches -> 4 pads
    assert third["video_grid_thw"].tolist() == [[2, 4, 6]]
    assert third["image_grid_thw"].tolist() == [[1, 4, 4]]
    assert third["second_per_grid_ts"].tolist() == [2.0]
    assert prompts[2].prompt_token_ids.count(VIDEO_PAD) == 12
    assert prompts[2].prompt_token_ids.count(IMAGE_PAD) == 4
    assert third["media_cost"] == 2 * 4 * 6 + 16
    assert prompts[1].multimodal == {}


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_m_rope_time_axis_over_the_video(family: str) -> None:
    model = FAMILIES[family]()
    prompt = mixed_prompts()[0]  # 3 temporal patches of 3 x 2 merged tokens, 1 s each
    ids = torch.tensor([prompt.prompt_token_ids])
    built = multimodal_inputs_for(model).model_inputs(
        ids, torch.ones_like(ids), [prompt.multimodal]
    )
    positions = built.kwargs["position_ids"][:, 0]  # [3, T]
    pads = (ids[0] == VIDEO_PAD).nonzero().squeeze(-1)
    start = int(pads[0])  # the text before the video holds positions 0 .. start - 1
    # Qwen2-VL: one step a temporal patch; Qwen2.5-VL: tokens_per_second * 1 s a patch
    step = 1 if family == "qwen2_vl" else model.config.vision_config.tokens_per_second
    assert step != 1 or family == "qwen2_vl"
    assert positions[0, pads].tolist() == [start + k * step for k in range(3) for _ in range(6)]
    assert positions[1, pads].tolist() == [start + r for _ in range(3) for r in (0, 0, 1, 1, 2, 2)]
    assert positions[2, pads].tolist() == [start + c for _ in range(3) for c in (0, 1) * 3]
    after = int(pads[-1]) + 1  # transformers 5.23: text resumes max(h, w) / merge = 3 on
    assert positions[:, after].tolist() == [start + 3] * 3


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_policy_logprobs_equal_the_models_own_forward(family: str) -> None:
    model = FAMILIES[family]()
    prompts = mixed_prompts()
    completions = [Completion(i, r, "", "stop") for i, r in enumerate(RESPONSES)]
    batch = build_rollout_tensors(prompts, completions, pad_token_id=0).sequences
    policy = HfPolicy(model, multimodal=multimodal_inputs_for(model))
    with torch.no_grad():
        got = policy.forward(batch).logprobs
    for row, (prompt, response) in enumerate(zip(prompts, RESPONSES, strict=True)):
        want = direct_logprobs(model, prompt, response)
        torch.testing.assert_close(got[row, : len(response)].double(), want, atol=1e-5, rtol=1e-5)


def test_the_video_changes_the_logprobs() -> None:
    model = tiny_qwen2_vl()
    tok = tiny_mm_tokenizer()
    encoder = VisionVideoEncoder(tok, tiny_image_processor())
    a, b = (VideoFrames(tuple(colour_frames(2, seed=s)), 2.0) for s in (7, 8))
    rows = [
        encoder.encode(video_record(tok, str(i), "x", videos=[v])) for i, v in enumerate((a, b))
    ]
    first, second = (direct_logprobs(model, r, (40, 41)) for r in rows)
    assert (first - second).abs().max() > 1e-4


def test_placeholder_mismatch_names_the_row() -> None:
    model = tiny_qwen2_vl()
    prompt = mixed_prompts()[0]
    ids = torch.tensor([prompt.prompt_token_ids[:-3] + (VIDEO_PAD,) * 3])  # 3 pads too many
    with pytest.raises(ValueError, match=r"row 0 \(t row 0\): 21 video placeholder tokens.*18"):
        multimodal_inputs_for(model).model_inputs(ids, torch.ones_like(ids), [prompt.multimodal])


def test_encoder_refuses_undecoded_videos() -> None:
    tok = tiny_mm_tokenizer()
    encoder = VideoEncoder(tok, tiny_image_processor())
    record = video_record(tok, "9", "x", videos=[VideoFrames(tuple(colour_frames(1)), 1.0)])
    raw = record.__class__(
        record.uid, record.prompt_text, record.prompt_token_ids,
        multimodal={"videos": ["clip.mp4"]}, metadata=record.metadata,
    )  # fmt: skip
    with pytest.raises(ValueError, match=r"t row 9: video 0 is a str, not decoded frames"):
        encoder.encode(raw)


def _batch(prompts: Sequence[PromptRecord], responses: Sequence[Sequence[int]]):
    completions = [Completion(i, r, "", "stop") for i, r in enumerate(responses)]
    return build_rollout_tensors(prompts, completions, pad_token_id=0).sequences


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_packed_video_rows_equal_the_padded_path(family: str) -> None:
    model = FAMILIES[family]()
    inputs = multimodal_inputs_for(model)
    prompts = mixed_prompts()
    batch = _batch(prompts, RESPONSES)
    with torch.no_grad():
        want = HfPolicy(model, multimodal=inputs).forward(batch).logprobs
        got = HfPolicy(model, multimodal=inputs, packing=True).forward(batch).logprobs
        order = [2, 0, 1]
        swapped = HfPolicy(model, multimodal=inputs, packing=True).forward(
            _batch([prompts[i] for i in order], [RESPONSES[i] for i in order])
        )
    torch.testing.assert_close(got, want, atol=1e-5, rtol=0)
    torch.testing.assert_close(swapped.logprobs[[1, 2, 0]], got, atol=1e-5, rtol=0)


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_engine_logprobs_equal_the_policys(family: str) -> None:
    model = FAMILIES[family]()
    inputs = multimodal_inputs_for(model)
    engine = HfRolloutEngine(model, tiny_mm_tokenizer(), torch.device("cpu"), multimodal=inputs)
    prompts = mixed_prompts()  # video / text / image + video
    completions = engine.generate(prompts, SamplingParams(n=2, max_new_tokens=6, seed=3))
    assert [c.prompt_index for c in completions] == [0, 0, 1, 1, 2, 2]
    batch = build_rollout_tensors(prompts, completions, pad_token_id=0).sequences
    with torch.no_grad():
        policy_lp = HfPolicy(model, multimodal=inputs).forward(batch).logprobs
    for row, completion in enumerate(completions):
        assert not set(completion.token_ids) & set(SUPPRESSED)  # pads are never sampled
        n = len(completion.token_ids)
        engine_lp = torch.tensor(completion.logprobs)
        torch.testing.assert_close(policy_lp[row, :n], engine_lp, atol=1e-4, rtol=0)


def test_the_vllm_request_of_a_video_row_is_refused_by_name() -> None:
    from lightrft.adapters.vllm.media_prompts import MediaPromptError, media_request

    with pytest.raises(MediaPromptError, match=r"t row 0: media of kind 'video'"):
        media_request(mixed_prompts()[0])
