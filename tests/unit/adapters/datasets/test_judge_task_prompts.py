"""Judge prompts in the original LightRFT's grm_vl_rl layout: each row's system prompt is the
one of its data set's task type (a YAML of prompts by task type), image and video pairs are
shown as media, and the original's <answer> verdict is scored against the preference."""

from __future__ import annotations

from pathlib import Path

import pytest

from lightrft.adapters.datasets.judge_pairs import load_judge_pairs
from lightrft.adapters.datasets.task_prompts import TaskPrompts
from lightrft.adapters.reward_models.judge_agreement import JudgeAgreementReward
from lightrft.domain.types import Completion, PromptRecord, RewardSample
from tests.helpers.judge_media_sets import RAPIDATA_I2V, SCORES, hpdv3
from tests.helpers.reward_set_files import image_value, touch_video, write_parquet
from tests.unit.adapters.hf.hf_tiny import tiny_tokenizer


def prompts_file(tmp_path: Path, text: str) -> TaskPrompts:
    file = tmp_path / "prompts.yaml"
    file.write_text(text)
    return TaskPrompts(file)


BOTH = "text-to-image: |\n  Images for {prompt}: judge.\nimage-to-video: Videos of {prompt}.\n"


def rapidata(root: Path) -> Path:
    for name in ("a.mp4", "b.mp4"):
        touch_video(root / "videos" / name)
    row = {"prompt": "spin it", "file_name1": "a.mp4", "file_name2": "b.mp4",
           "prompt_asset": image_value((1, 2, 3)),
           **{f"weighted_results1_{m}": 0.1 for m in SCORES},
           **{f"weighted_results2_{m}": 0.9 for m in SCORES}}  # fmt: skip
    return write_parquet(root / "data" / "train.parquet", [row], RAPIDATA_I2V)


def test_each_set_takes_its_task_types_prompt(tmp_path: Path) -> None:
    prompts = prompts_file(tmp_path, BOTH)
    spec = f"rapidata-i2v:{rapidata(tmp_path / 'r')},hpdv3:{hpdv3(tmp_path / 'h')}"
    rows, skipped = load_judge_pairs(spec, tiny_tokenizer(), task_prompts=prompts)
    assert skipped == 0 and len(rows) == 3
    video, *images = rows
    system, user = video["prompt"]
    assert system == {"role": "system", "content": "Videos of spin it."}
    assert user["content"].splitlines() == [
        "Reference Image:<image>",
        "The following is the first video.<video>",
        "The following is the second video.<video>",
    ]
    assert len(video["images"]) == 1  # the initial image
    chosen = str((tmp_path / "r" / "videos" / "b.mp4").resolve())  # the higher scores
    first_is_chosen = video["videos"][0] == chosen
    assert video["reference"] == ("A" if first_is_chosen else "B")
    assert sorted(Path(v).name for v in video["videos"]) == ["a.mp4", "b.mp4"]
    assert images[0]["prompt"][0]["content"] == "Images for a red cat: judge.\n"
    assert "The following is the first image.<image>" in images[0]["prompt"][1]["content"]
    assert len(images[0]["images"]) == 2 and "videos" not in images[0]


def test_a_missing_task_type_names_the_file_and_the_type(tmp_path: Path) -> None:
    prompts = prompts_file(tmp_path, "text-to-image: judge {prompt}\n")
    with pytest.raises(ValueError) as err:
        load_judge_pairs(
            f"rapidata-i2v:{rapidata(tmp_path)}", tiny_tokenizer(), task_prompts=prompts
        )
    text = str(err.value)
    assert str(prompts.file) in text and "'image-to-video'" in text and "text-to-image" in text


def test_the_file_must_map_task_types_to_prompts(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="mapping of task type to prompt"):
        prompts_file(tmp_path, "- a\n- b\n")
    with pytest.raises(FileNotFoundError, match="gone.yaml"):
        TaskPrompts(tmp_path / "gone.yaml")


def sample(text: str, reference: str) -> RewardSample:
    prompt = PromptRecord(uid="p", prompt_text="x", prompt_token_ids=(1,), reference=reference)
    return RewardSample(prompt, Completion(0, (1,), text, "stop"))


@pytest.mark.parametrize(
    ("text", "reference", "score"),
    [
        ("<think>1 wins</think><answer>Video 1 is better</answer>", "A", 2.0),
        ("<think>2 wins</think><answer>Image 2 is better</answer>", "B", 2.0),
        ("<think>2 wins</think><answer>Image 2 is better</answer>", "A", 1.0),  # format only
        ("<answer>Video 1 is better</answer>", "A", 1.0),  # no reasoning: accuracy only
        ("<think>x</think><answer>Both are equally good</answer>", "A", 0.0),
        ("<think>x</think>[[A]]", "A", 0.0),  # the bracket form is not this verdict
    ],
)
def test_the_original_answer_verdict(text: str, reference: str, score: float) -> None:
    reward = JudgeAgreementReward(verdict="answer")
    result = reward.score([sample(text, reference)])
    assert result.scores.tolist() == [score]


def test_the_built_in_form_shows_video_pairs_as_videos(tmp_path: Path) -> None:
    (row,), _ = load_judge_pairs(f"rapidata-i2v:{rapidata(tmp_path)}", tiny_tokenizer())
    assert row["prompt"].count("<video>") == 2 and row["prompt"].count("<image>") == 1
    assert "spin it" in row["prompt"] and len(row["images"]) == 1
    chosen = str((tmp_path / "videos" / "b.mp4").resolve())
    assert (row["videos"][0] == chosen) == (row["reference"] == "A")
