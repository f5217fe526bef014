"""The built-in video task: the dot's direction read back from the pixels, a path that
stays inside the frame, a first frame that is the same for both directions, determinism in
the seed, and rows that render and encode for a tiny Qwen2-VL."""

from __future__ import annotations

import numpy as np
import pytest

from lightrft.adapters.datasets.synthetic_video import dot_path, motion_problems, motion_prompts
from lightrft.adapters.datasets.synthetic_visual import BACKGROUND
from lightrft.adapters.hf.vision_language import VisionVideoEncoder
from tests.helpers.tiny_multimodal import (
    VIDEO_WORDS,
    task_tokenizer,
    tiny_image_processor,
    token_id,
)


def dot_centre_x(frame) -> float:
    """The mean column of the pixels that are not background."""
    pixels = np.asarray(frame).astype(int)
    mask = np.abs(pixels - np.array(BACKGROUND)).sum(-1) > 30
    return float(np.nonzero(mask)[1].mean())


def test_the_direction_is_in_the_pixels_and_the_dot_stays_inside() -> None:
    rows = motion_problems(64, seed=3)
    assert {r["reference"] for r in rows} == {"left", "right"}
    for row in rows:
        xs = [dot_centre_x(f) for f in row["video"].frames]
        want = 6 if row["reference"] == "right" else -6
        assert np.allclose(xs, [28 + want * i for i in range(4)], atol=0.5), (row["reference"], xs)
        for frame in row["video"].frames:  # the whole dot is drawn: 8 px radius, inside
            assert frame.size == (56, 56)
            pixels = np.asarray(frame)
            for edge in (pixels[:, 0], pixels[:, -1], pixels[0], pixels[-1]):
                assert (edge == BACKGROUND).all()


def test_the_first_frame_does_not_tell_the_direction() -> None:
    rows = motion_problems(2000, seed=0)
    answers_by_first_frame: dict[bytes, set[str]] = {}
    for row in rows:
        first = row["video"].frames[0]
        answers_by_first_frame.setdefault(first.tobytes(), set()).add(row["reference"])
    # 38 rows x 4 colours = 152 possible first frames, each the same for both directions:
    # with 2000 rows nearly every one was drawn going both ways
    assert len(answers_by_first_frame) <= 152
    both = sum(answers == {"left", "right"} for answers in answers_by_first_frame.values())
    assert both >= 0.9 * len(answers_by_first_frame)
    assert dot_path(-1, 4, 56, 6, 8) == [28, 22, 16, 10]
    assert dot_path(1, 4, 56, 6, 8) == [28, 34, 40, 46]
    with pytest.raises(ValueError, match="does not fit 56 px"):
        dot_path(1, 4, 56, 7, 8)  # 28 + 21 + 8 = 57: off the right edge


def test_rows_are_deterministic_in_the_seed_and_encode() -> None:
    a, b, c = motion_problems(8, 1), motion_problems(8, 1), motion_problems(8, 2)
    same = [[f.tobytes() for f in r["video"].frames] for r in a]
    assert same == [[f.tobytes() for f in r["video"].frames] for r in b]
    assert same != [[f.tobytes() for f in r["video"].frames] for r in c]
    tok = task_tokenizer(VIDEO_WORDS)
    source = motion_prompts(4, 0, tokenizer=tok)
    record = VisionVideoEncoder(tok, tiny_image_processor()).encode(source[0])
    # 4 frames of 56 x 56 -> 2 temporal patches of 4 x 4 -> 8 video pads
    assert record.multimodal["video_grid_thw"].tolist() == [[2, 4, 4]]
    assert record.prompt_token_ids.count(token_id("<|video_pad|>")) == 8
    for word in ("left", "right"):  # each answer is one token of the task tokenizer
        assert len(tok(word, add_special_tokens=False).input_ids) == 1
