"""Videos on the Qwen2.5-Omni thinker: a row with an image, a video and a clip, a video-only
row and a text row; the policy's log-probs equal the thinker's own forward (it computes its
M-RoPE positions itself from the grids, ``video_second_per_grid`` and the audio lengths)."""

from __future__ import annotations

import numpy as np
import torch

from lightrft.adapters.hf import HfPolicy, HfRolloutEngine
from lightrft.adapters.hf.multimodal_inputs import multimodal_inputs_for
from lightrft.adapters.hf.omni import OmniEncoder
from lightrft.application.batching import build_rollout_tensors
from lightrft.domain.modality import VideoFrames
from lightrft.domain.types import Completion, PromptRecord, SamplingParams
from tests.helpers.tiny_multimodal import noise_image, tiny_feature_extractor, tiny_image_processor
from tests.helpers.tiny_omni import (
    omni_token_id,
    thinker_logprobs,
    tiny_omni_thinker,
    tiny_omni_tokenizer,
)
from tests.helpers.tiny_video import colour_frames

IMAGE, VIDEO, AUDIO = (omni_token_id(t) for t in ("<|IMAGE|>", "<|VIDEO|>", "<|AUDIO|>"))
RESPONSES = [(40, 41, 42), (50, 51), (60, 61, 62, 1)]


def _record(uid: str, text: str, images=(), videos=(), clips=()) -> PromptRecord:
    tok = tiny_omni_tokenizer()
    parts = (
        [{"type": "image"}] * len(images)
        + [{"type": "video"}] * len(videos)
        + [{"type": "audio"}] * len(clips)
        + [{"type": "text", "text": text}]
    )
    rendered = tok.apply_chat_template(
        [{"role": "user", "content": parts}], tokenize=False, add_generation_prompt=True
    )
    media = {
        key: list(items)
        for key, items in (("images", images), ("videos", videos), ("audios", clips))
        if items
    }
    ids = tuple(tok(rendered, add_special_tokens=False).input_ids)
    return PromptRecord(uid, rendered, ids, multimodal=media, metadata={"where": f"o row {uid}"})


def prompts() -> list[PromptRecord]:
    clip = (0.3 * np.sin(np.arange(8000) / 16000 * 2 * np.pi * 440)).astype(np.float32)
    video = VideoFrames(tuple(colour_frames(3, 56, 84, seed=4)), 2.0)
    other = VideoFrames(tuple(colour_frames(4, 56, 56, seed=5)), 1.0)
    encoder = OmniEncoder(tiny_omni_tokenizer(), tiny_image_processor(), tiny_feature_extractor(1))
    raw = [
        _record("0", "all three?", [noise_image(40, 40, 1)], [video], [(clip, 16000)]),
        _record("1", "words"),
        _record("2", "moving?", videos=[other]),
    ]
    return [encoder.encode(r) for r in raw]


def test_thinker_video_rows_equal_its_own_forward_and_the_engine() -> None:
    model = tiny_omni_thinker()
    rows = prompts()
    # 3 frames 56 x 84 -> (2, 6, 4) -> 12 pads; 4 frames 56 x 56 -> (2, 4, 4) -> 8 pads
    assert rows[0].multimodal["video_grid_thw"].tolist() == [[2, 6, 4]]
    assert rows[0].prompt_token_ids.count(VIDEO) == 12
    assert rows[2].prompt_token_ids.count(VIDEO) == 8
    inputs = multimodal_inputs_for(model)
    completions = [Completion(i, r, "", "stop") for i, r in enumerate(RESPONSES)]
    batch = build_rollout_tensors(rows, completions, pad_token_id=0).sequences
    with torch.no_grad():
        got = HfPolicy(model, multimodal=inputs).forward(batch).logprobs
    for row, (prompt, response) in enumerate(zip(rows, RESPONSES, strict=True)):
        want = thinker_logprobs(model, prompt, response)
        torch.testing.assert_close(got[row, : len(response)].double(), want, atol=1e-5, rtol=1e-5)
    engine = HfRolloutEngine(model, tiny_omni_tokenizer(), torch.device("cpu"), multimodal=inputs)
    sampled = engine.generate(rows, SamplingParams(n=1, max_new_tokens=4, seed=1))
    batch = build_rollout_tensors(rows, sampled, pad_token_id=0).sequences
    with torch.no_grad():
        policy = HfPolicy(model, multimodal=inputs).forward(batch).logprobs
    for row, completion in enumerate(sampled):
        n = len(completion.token_ids)
        torch.testing.assert_close(
            policy[row, :n], torch.tensor(completion.logprobs), atol=1e-4, rtol=0
        )


def test_the_time_axis_steps_by_seconds_per_patch() -> None:
    model = tiny_omni_thinker()
    row = prompts()[2]  # 4 frames at 1 fps: 2 patches of 2 s, 2 x 2 merged tokens each
    ids = torch.tensor([row.prompt_token_ids])
    built = multimodal_inputs_for(model).model_inputs(ids, torch.ones_like(ids), [row.multimodal])
    pads = (ids[0] == VIDEO).nonzero().squeeze(-1)
    times = built.kwargs["position_ids"][0, 0, pads].tolist()
    start, step = times[0], int(2.0 * model.config.position_id_per_seconds)
    assert step > 1 and times == [start] * 4 + [start + step] * 4
