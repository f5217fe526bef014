"""Video rows: frame sampling counts by hand, frame lists / folders / video files (PyAV),
rows with ``videos_key`` or chat video parts rendered and encoded for a tiny Qwen2-VL, and
bad videos named by file, row and key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from lightrft.adapters.datasets import BadRowError, HfPromptDataset, RowSpec
from lightrft.adapters.datasets.placeholders import MediaPlaceholders
from lightrft.adapters.datasets.sft_rows import load_sft_dataset
from lightrft.adapters.datasets.video_frames import FrameSampling, load_video, sample_indices
from lightrft.adapters.hf import HfPolicy
from lightrft.adapters.hf.multimodal_inputs import EncodedPromptSource, multimodal_inputs_for
from lightrft.adapters.hf.vision_language import VisionVideoEncoder
from lightrft.application.batching import build_rollout_tensors
from lightrft.domain.sft import sft_batch
from lightrft.domain.types import Completion
from tests.helpers.tiny_multimodal import (
    tiny_image_processor,
    tiny_mm_tokenizer,
    tiny_qwen2_vl,
    token_id,
)
from tests.helpers.tiny_video import colour_frames, plain_frames, write_video

VIDEO_PAD, IMAGE_PAD = token_id("<|video_pad|>"), token_id("<|image_pad|>")
PADS = MediaPlaceholders(image="<|image_pad|>", video="<|video_pad|>")


@pytest.mark.parametrize(
    ("total", "source_fps", "fps", "max_frames", "want"),
    [
        # 30 frames at 30 fps = 1 s; 2 fps -> floor(30 * 2 / 30) = 2 frames: 0, 15
        (30, 30.0, 2.0, 16, [0, 15]),
        # 25 frames at 10 fps = 2.5 s; 2 fps -> 5 frames, every 5th
        (25, 10.0, 2.0, 16, [0, 5, 10, 15, 20]),
        # 100 frames at 25 fps = 4 s; 4 fps -> 16, capped at 6: floor(i * 100 / 6)
        (100, 25.0, 4.0, 6, [0, 16, 33, 50, 66, 83]),
        # a 3-frame clip asked for more than it has: every frame
        (3, 1.0, 5.0, 16, [0, 1, 2]),
        # too short for one frame at this rate: still one
        (4, 30.0, 2.0, 16, [0]),
        # fps None: every frame up to max_frames, spread
        (10, 5.0, None, 4, [0, 2, 5, 7]),
    ],
)
def test_sample_indices_by_hand(total, source_fps, fps, max_frames, want) -> None:
    assert sample_indices(total, source_fps, FrameSampling(fps, max_frames)) == want


def test_a_frame_list_is_taken_at_the_sampling_rate_unless_it_says_its_own() -> None:
    frames = colour_frames(6)
    video = load_video(frames, where="r", key="video", sampling=FrameSampling(2.0, 4))
    # 6 frames taken to be at 2 fps (3 s); 2 fps -> 6 frames, capped at 4: 0, 1, 3, 4
    assert len(video.frames) == 4 and video.fps == pytest.approx(4 * 2.0 / 6)
    assert video.frames[2].tobytes() == frames[3].tobytes()
    own = load_video(
        {"frames": frames, "fps": 6.0}, where="r", key="video", sampling=FrameSampling(2.0, 16)
    )
    # 6 frames at 6 fps = 1 s -> 2 frames (0, 3) at 2 fps
    assert [f.tobytes() for f in own.frames] == [frames[0].tobytes(), frames[3].tobytes()]
    assert own.fps == pytest.approx(2.0)


def test_a_frame_folder_is_read_in_name_order(tmp_path: Path) -> None:
    folder = tmp_path / "clip"
    folder.mkdir()
    colours = [(255, 0, 0), (0, 255, 0), (0, 0, 255), (255, 255, 0)]
    for i, frame in enumerate(plain_frames(colours)):
        frame.save(folder / f"{i:03d}.png")
    (folder / "notes.txt").write_text("not a frame")
    video = load_video(
        "clip", where="r", key="v", sampling=FrameSampling(None, 16), base_dir=tmp_path
    )
    assert [f.getpixel((0, 0)) for f in video.frames] == colours


def test_a_video_file_is_decoded_and_sampled(tmp_path: Path) -> None:
    pytest.importorskip("av")
    colours = [(250, 10, 10), (10, 250, 10)] * 5  # 10 frames at 5 fps: 2 s
    path = write_video(tmp_path / "clip.mp4", plain_frames(colours, size=64), fps=5)
    video = load_video(str(path), where="r", key="v", sampling=FrameSampling(2.5, 16))
    # floor(10 * 2.5 / 5) = 5 frames: 0, 2, 4, 6, 8 (all red), at 2.5 fps
    assert len(video.frames) == 5 and video.fps == pytest.approx(2.5)
    assert video.frames[0].size == (64, 64)
    for frame in video.frames:  # a lossy codec: near the drawn colour
        red, green, _ = frame.getpixel((32, 32))
        assert red > 200 and green < 60


def test_bad_videos_are_named_by_file_row_and_key(tmp_path: Path) -> None:
    sampling = FrameSampling()
    with pytest.raises(BadRowError, match=r"d.jsonl row 2: video file .*gone.mp4 does not exist"):
        load_video(
            "gone.mp4", where="d.jsonl row 2", key="video", sampling=sampling, base_dir=tmp_path
        )
    (tmp_path / "empty").mkdir()
    with pytest.raises(BadRowError, match=r"row 1: video folder .*empty holds no image files"):
        load_video(str(tmp_path / "empty"), where="row 1", key="video", sampling=sampling)
    mixed = [colour_frames(1, 56, 56)[0], colour_frames(1, 28, 56)[0]]
    with pytest.raises(BadRowError, match=r"row 4: the video's frames has frames of different"):
        load_video(mixed, where="row 4", key="video", sampling=FrameSampling(None, 16))
    with pytest.raises(BadRowError, match=r"row 5: .* frame 0"):
        load_video(["nope.png"], where="row 5", key="video", sampling=sampling)


def test_a_file_that_is_not_a_video_is_named(tmp_path: Path) -> None:
    pytest.importorskip("av")
    (tmp_path / "fake.mp4").write_text("this is not a video")
    with pytest.raises(BadRowError, match=r"row 3: video file .*fake.mp4 cannot be decoded"):
        load_video(
            "fake.mp4", where="row 3", key="video", sampling=FrameSampling(), base_dir=tmp_path
        )


def _write_rows(tmp_path: Path) -> Path:
    for name, seed in (("a", 1), ("b", 2)):
        folder = tmp_path / name
        folder.mkdir()
        for i, frame in enumerate(colour_frames(3, 56, 56, seed=seed)):
            frame.save(folder / f"{i}.png")
    rows = [
        {"prompt": "Where does <video> go?", "reference": "left", "video": "a"},
        {"prompt": "plain words", "reference": "1", "video": []},
        {"prompt": "frames", "reference": "up", "video": ["b/0.png", "b/1.png"]},
        {
            "prompt": [
                {
                    "role": "user",
                    "content": [{"type": "video", "video": "b"}, {"type": "text", "text": "hi"}],
                }
            ],
            "reference": "x",
            "video": [],
        },
    ]
    path = tmp_path / "videos.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return path


def test_rows_with_videos_render_encode_and_score(tmp_path: Path) -> None:
    tok = tiny_mm_tokenizer()
    spec = RowSpec(videos_key="video", placeholders=PADS, frame_sampling=FrameSampling(None, 16))
    data = HfPromptDataset(_write_rows(tmp_path), tok, spec=spec, name="vid")
    assert len(data) == 4
    pad = "<|vision_start|><|video_pad|><|vision_end|>"
    assert f"Where does {pad} go?" in data[0].prompt_text  # at the <video> marker
    assert data[1].multimodal == {}
    assert len(data[2].multimodal["videos"][0].frames) == 2  # a frame list
    assert len(data[3].multimodal["videos"][0].frames) == 3  # a chat video part (folder)
    encoded = EncodedPromptSource(data, VisionVideoEncoder(tok, tiny_image_processor()))
    prompts = [encoded[i] for i in range(4)]
    # 3 frames of 56 x 56 -> 2 temporal patches of 4 x 4 -> 2 * 16 / 4 = 8 pads
    assert prompts[0].multimodal["video_grid_thw"].tolist() == [[2, 4, 4]]
    assert prompts[0].prompt_token_ids.count(VIDEO_PAD) == 8
    assert prompts[2].prompt_token_ids.count(VIDEO_PAD) == 4  # 2 frames: 1 patch
    model = tiny_qwen2_vl()
    completions = [Completion(i, (40, 41), "", "stop") for i in range(4)]
    batch = build_rollout_tensors(prompts, completions, pad_token_id=0).sequences
    with torch.no_grad():
        out = HfPolicy(model, multimodal=multimodal_inputs_for(model)).forward(batch).logprobs
    assert out.shape == (4, 2) and bool(torch.isfinite(out).all())


def test_a_row_whose_video_is_missing_is_named_or_skipped(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    rows = [
        {"prompt": "p", "reference": "r", "video": "nowhere.mp4"},
        {"prompt": "q", "reference": "r", "video": [[0, 1]]},  # frames that are no images
        {"prompt": "fine", "reference": "r", "video": []},
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    spec = RowSpec(videos_key="video", placeholders=PADS)
    with pytest.raises(BadRowError, match=r"bad.jsonl row 0: video file .*nowhere.mp4 does not"):
        HfPromptDataset(path, tiny_mm_tokenizer(), spec=spec, name="bad")
    skip = RowSpec(videos_key="video", placeholders=PADS, on_bad_row="skip")
    kept = HfPromptDataset(path, tiny_mm_tokenizer(), spec=skip, name="bad")
    assert len(kept) == 1 and kept.stats.skipped_bad_rows == 2


def test_a_typed_video_pad_is_a_bad_row(tmp_path: Path) -> None:
    path = tmp_path / "typed.jsonl"
    path.write_text(
        json.dumps({"prompt": "look <|video_pad|>", "reference": "r", "video": []}) + "\n"
    )
    spec = RowSpec(videos_key="video", placeholders=PADS)
    with pytest.raises(BadRowError, match=r"row 0: the prompt holds 1 video placeholder token"):
        HfPromptDataset(path, tiny_mm_tokenizer(), spec=spec, name="typed")


def test_sft_rows_with_videos_expand_untrained_and_score_as_the_model(tmp_path: Path) -> None:
    folder = tmp_path / "clip"
    folder.mkdir()
    for i, frame in enumerate(colour_frames(4, 56, 84, seed=3)):
        frame.save(folder / f"{i}.png")
    plain_frames([(200, 0, 0)], size=56)[0].save(tmp_path / "red.png")
    question = {"type": "text", "text": "Which way?"}
    rows = [
        {"messages": [
            {"role": "user", "content": [{"type": "video", "video": "clip"}, question]},
            {"role": "assistant", "content": "left"},
        ]},
        {"messages": [
            {"role": "user", "content": [
                {"type": "image", "image": "red.png"},
                {"type": "video", "video": {"path": "clip", "fps": 4}},
                question,
            ]},
            {"role": "assistant", "content": "up"},
        ]},
    ]  # fmt: skip
    path = tmp_path / "sft.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    tok = tiny_mm_tokenizer()
    data = load_sft_dataset(path, tok, media=VisionVideoEncoder(tok, tiny_image_processor()))
    video, both = data[0], data[1]
    # 4 frames (taken at 2 fps) of 56 wide x 84 high -> (2, 6, 4) -> 2 * 24 / 4 = 12 pads
    assert video.multimodal["video_grid_thw"].tolist() == [[2, 6, 4]]
    assert video.prompt_ids.count(VIDEO_PAD) == 12 and VIDEO_PAD not in video.response_ids
    # at 4 fps for 1 s at the default 2 fps: 2 frames (0, 2) -> (1, 6, 4) -> 6 pads
    assert both.multimodal["video_grid_thw"].tolist() == [[1, 6, 4]]
    assert both.multimodal["image_grid_thw"].tolist() == [[1, 4, 4]]
    assert both.prompt_ids.count(VIDEO_PAD) == 6 and both.prompt_ids.count(IMAGE_PAD) == 4
    trained = [t for t, m in zip(both.response_ids, both.loss_mask, strict=True) if m]
    assert tok.decode(trained) == "up<|im_end|>\n"
    model = tiny_qwen2_vl()
    batch = sft_batch([video, both], pad_token_id=0)
    with torch.no_grad():
        got = HfPolicy(model, multimodal=multimodal_inputs_for(model)).forward(batch).logprobs
    for row, example in enumerate((video, both)):  # the model's own forward on each row
        ids = torch.tensor([list(example.prompt_ids) + list(example.response_ids)])
        payload = example.multimodal
        kwargs = {k: payload[k] for k in ("pixel_values", "image_grid_thw") if k in payload}
        kwargs.update(
            pixel_values_videos=payload["pixel_values_videos"],
            video_grid_thw=payload["video_grid_thw"],
            mm_token_type_ids=(ids == IMAGE_PAD).int() + 2 * (ids == VIDEO_PAD).int(),
        )
        with torch.no_grad():
            logits = model(input_ids=ids, use_cache=False, **kwargs).logits[0].double()
        logits[:, [IMAGE_PAD, VIDEO_PAD]] = float("-inf")
        start = len(example.prompt_ids)
        logp = torch.log_softmax(logits, -1)[start - 1 : -1]
        want = logp.gather(-1, torch.tensor(example.response_ids)[:, None]).squeeze(-1)
        n = len(example.response_ids)
        torch.testing.assert_close(got[row, :n].double(), want, atol=1e-5, rtol=1e-5)
