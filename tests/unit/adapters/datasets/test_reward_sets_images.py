"""Text-to-image reward data sets read from fixtures in their published layouts: HPDv3,
ImageRewardDB, ImageGen-CoT-Reward, OmniRewardBench (t2i), Rapidata (t2i)."""

from __future__ import annotations

from pathlib import Path

import datasets
import pytest

from lightrft.adapters.datasets.bad_rows import BadRowsError
from lightrft.adapters.datasets.reward_sets import (
    REWARD_DATASETS,
    RewardSetOptions,
    response_payload,
)
from lightrft.domain.types import PreferencePair
from tests.helpers.reward_set_files import (
    FLOAT,
    STRING,
    colour_of,
    colour_png,
    image_value,
    rendered,
    renderer,
    write_json,
    write_parquet,
)

RED, GREEN, BLUE, WHITE = (255, 0, 0), (0, 255, 0), (0, 0, 255), (255, 255, 255)


def load(name: str, path: Path, on_bad_row: str = "error"):  # noqa: ANN201
    options = RewardSetOptions(on_bad_row=on_bad_row)  # type: ignore[arg-type]
    return REWARD_DATASETS.get(name).load(path, renderer(), options)


def colours(pair: PreferencePair) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """(chosen colour, rejected colour) of a one-image-each pair."""
    (chosen,) = pair.multimodal["chosen"]["images"]
    (rejected,) = pair.multimodal["rejected"]["images"]
    return colour_of(chosen), colour_of(rejected)


def assert_image_pair(pair: PreferencePair, uid: str, prompt: str, chosen, rejected) -> None:  # noqa: ANN001
    assert pair.uid == uid
    assert pair.prompt == rendered(prompt)
    assert (pair.chosen, pair.rejected) == ("<image>", "<image>")
    assert set(pair.multimodal) == {"chosen", "rejected"}
    assert colours(pair) == (chosen, rejected)
    assert (pair.margin, pair.chosen_sign, pair.rejected_sign) == (0.0, 0, 0)


# --- HPDv3: train.json rows {prompt, path1 (preferred), path2, model1, model2, ...}


def hpdv3(root: Path, rows: list[dict] | None = None) -> Path:
    colour_png(root / "images" / "a.png", RED)
    colour_png(root / "images" / "b.png", GREEN)
    colour_png(root / "images" / "c.png", BLUE)
    rows = rows or [
        {"prompt": "a red cat", "path1": "images/a.png", "path2": "images/b.png",
         "model1": "m1", "model2": "m2", "confidence": 0.9, "choice_dist": [3, 1]},
        {"prompt": "a blue dog", "path1": "images/c.png", "path2": "images/a.png",
         "model1": "m2", "model2": "m1", "confidence": 0.7, "choice_dist": [2, 1]},
    ]  # fmt: skip
    return write_json(root / "train.json", rows)


def test_hpdv3_path1_is_chosen(tmp_path: Path) -> None:
    loaded = load("hpdv3", hpdv3(tmp_path))
    assert (loaded.skipped, loaded.ties) == (0, 0)
    first, second = loaded.records
    assert_image_pair(first, "train:0", "a red cat", RED, GREEN)
    assert_image_pair(second, "train:1", "a blue dog", BLUE, RED)


def test_hpdv3_missing_image_is_named_by_file_and_row(tmp_path: Path) -> None:
    rows = [
        {"prompt": "a red cat", "path1": "images/a.png", "path2": "images/b.png"},
        {"prompt": "a lost cat", "path1": "images/a.png", "path2": "images/gone.png"},
    ]
    path = hpdv3(tmp_path, rows)
    with pytest.raises(BadRowsError) as info:
        load("hpdv3", path)
    gone = tmp_path / "images" / "gone.png"
    assert str(info.value) == f"train.json row 1: image file {gone} does not exist (from) 'path2'"
    assert "\n" not in str(info.value)
    skipped = load("hpdv3", path, "skip")
    assert [p.uid for p in skipped.records] == ["train:0"] and skipped.skipped == 1


def test_response_payload_merges_prompt_and_response_media(tmp_path: Path) -> None:
    pair = load("hpdv3", hpdv3(tmp_path)).records[0]
    (chosen,) = response_payload(pair, "chosen")["images"]
    (rejected,) = response_payload(pair, "rejected")["images"]
    assert (colour_of(chosen), colour_of(rejected)) == (RED, GREEN)


# --- ImageRewardDB: images/train/train_1/train_1.json, one row per image, ranked per prompt


def image_reward_db(root: Path, extra: list[dict] = ()) -> Path:  # type: ignore[assignment]
    shard = root / "images" / "train" / "train_1"
    for name, rgb in (("p1a", RED), ("p1b", GREEN), ("p1c", BLUE), ("p2a", WHITE), ("p2b", RED)):
        colour_png(shard / f"{name}.webp.png", rgb)
    rows = [
        {"image_path": f"images/train/train_1/{name}.webp.png", "prompt_id": pid,
         "prompt": prompt, "rank": rank, "overall_rating": 7 - rank, "classification": "People"}
        for name, pid, prompt, rank in (
            ("p1a", "001", "a castle", 2), ("p1b", "001", "a castle", 1),
            ("p1c", "001", "a castle", 2), ("p2a", "002", "a boat", 1), ("p2b", "002", "a boat", 3),
        )
    ]  # fmt: skip
    write_json(shard / "train_1.json", [*rows, *extra])
    write_json(root / "dataset_info.json", [{"not": "a shard"}])  # not named after its folder
    return root / "images" / "train"


def test_image_reward_db_pairs_every_two_ranks_of_a_prompt(tmp_path: Path) -> None:
    loaded = load("imagerewarddb", image_reward_db(tmp_path))
    # prompt 001: ranks 2, 1, 2 -> (b over a), (b over c); a, c tie. prompt 002: a over b
    assert loaded.ties == 1 and loaded.skipped == 0
    got = [(p.uid, p.prompt, *colours(p)) for p in loaded.records]
    assert got == [
        ("train_1:1>train_1:0", rendered("a castle"), GREEN, RED),
        ("train_1:1>train_1:2", rendered("a castle"), GREEN, BLUE),
        ("train_1:3>train_1:4", rendered("a boat"), WHITE, RED),
    ]


def test_image_reward_db_reads_from_the_root_too(tmp_path: Path) -> None:
    image_reward_db(tmp_path)
    assert len(load("imagerewarddb", tmp_path).records) == 3


def test_image_reward_db_bad_rank_is_named(tmp_path: Path) -> None:
    bad = {"image_path": "images/train/train_1/p2a.webp.png", "prompt_id": "003",
           "prompt": "x", "rank": "first"}  # fmt: skip
    path = image_reward_db(tmp_path, [bad])
    with pytest.raises(BadRowsError) as info:
        load("imagerewarddb", path)
    assert str(info.value) == (
        "train_1.json row 5: expected a number (1 is best), got 'first' in 'rank'"
    )


# --- ImageGen-CoT-Reward-5K: train_data.json rows {conversations, images}


def cot_rows(answers: list[str]) -> list[dict]:
    return [
        {
            "conversations": [
                {"from": "human",
                 "value": f"<image>\n<image>\nWhich image fits the caption 'scene {i}' better?"},
                {"from": "gpt", "value": f"<think>Image 1 is better lit, but...</think>{answer}"},
            ],
            "images": ["imgs/a.png", "imgs/b.png"],
        }
        for i, answer in enumerate(answers)
    ]  # fmt: skip


def test_imagegen_cot_reward_verdict_picks_the_chosen_image(tmp_path: Path) -> None:
    colour_png(tmp_path / "imgs" / "a.png", RED)
    colour_png(tmp_path / "imgs" / "b.png", BLUE)
    answers = ["<answer>Image 2 is better</answer>", "<answer>Image 1 is better</answer>"]
    path = write_json(tmp_path / "train_data.json", cot_rows(answers))
    first, second = load("imagegen-cot-reward-5k", path).records
    assert_image_pair(
        first, "train_data:0", "Which image fits the caption 'scene 0' better?", BLUE, RED
    )
    assert_image_pair(
        second, "train_data:1", "Which image fits the caption 'scene 1' better?", RED, BLUE
    )


def test_imagegen_cot_reward_without_verdict_is_a_bad_row(tmp_path: Path) -> None:
    colour_png(tmp_path / "imgs" / "a.png", RED)
    colour_png(tmp_path / "imgs" / "b.png", BLUE)
    rows = cot_rows(["<answer>Image 1 is better</answer>", "<answer>Both are fine</answer>"])
    path = write_json(tmp_path / "train_data.json", rows)
    with pytest.raises(BadRowsError) as info:
        load("imagegen-cot-reward-5k", path)
    assert str(info.value) == (
        "train_data.json row 1: the last turn has no verdict 'Image 1 is better' / "
        "'Image 2 is better' in 'conversations'"
    )


# --- OmniRewardBench t2i: <root>/text_to_image/test.parquet, media under <root>/media_data

OMNI_T2I = {
    "id": STRING, "prompt": STRING, "response1_path": STRING, "response2_path": STRING,
    "model1": STRING, "model2": STRING, "criteria": STRING, "criteria_preference": STRING,
}  # fmt: skip


def test_omnirewardbench_t2i_follows_criteria_preference(tmp_path: Path) -> None:
    colour_png(tmp_path / "media_data" / "t2i" / "x.png", RED)
    colour_png(tmp_path / "media_data" / "t2i" / "y.png", GREEN)
    base = {"model1": "a", "model2": "b", "criteria": "aesthetics",
            "response1_path": "t2i/x.png", "response2_path": "t2i/y.png"}  # fmt: skip
    rows = [
        {**base, "id": "0", "prompt": "a tree", "criteria_preference": "response2"},
        {**base, "id": "1", "prompt": "a lake", "criteria_preference": "tie"},
        {**base, "id": "2", "prompt": "a hill", "criteria_preference": "response1"},
    ]
    path = write_parquet(tmp_path / "text_to_image" / "test.parquet", rows, OMNI_T2I)
    loaded = load("omnirewardbench-t2i", path)
    assert loaded.ties == 1
    first, second = loaded.records
    assert_image_pair(first, "test:0", "a tree", GREEN, RED)
    assert_image_pair(second, "test:2", "a hill", RED, GREEN)


# --- Rapidata t2i: parquet rows {prompt, image1, image2 (HF Image), votes or weighted scores}


def test_rapidata_t2i_reads_votes_and_weighted_scores(tmp_path: Path) -> None:
    features = {"prompt": STRING, "image1": datasets.Image(), "image2": datasets.Image(),
                "votes_image1": datasets.Value("int64"), "votes_image2": datasets.Value("int64")}  # fmt: skip
    rows = [
        {"prompt": "a fox", "image1": image_value(RED), "image2": image_value(BLUE),
         "votes_image1": 3, "votes_image2": 9},
        {"prompt": "an owl", "image1": image_value(GREEN), "image2": image_value(WHITE),
         "votes_image1": 5, "votes_image2": 5},
    ]  # fmt: skip
    loaded = load(
        "rapidata-t2i", write_parquet(tmp_path / "data" / "train-0.parquet", rows, features)
    )
    assert loaded.ties == 1
    (pair,) = loaded.records
    assert_image_pair(pair, "train-0:0", "a fox", BLUE, RED)

    weighted = {"prompt": STRING, "image1": datasets.Image(), "image2": datasets.Image(),
                **{f"weighted_results_image{i}_{m}": FLOAT
                   for i in (1, 2) for m in ("Preference", "Coherence", "Alignment")}}  # fmt: skip
    scores = {"weighted_results_image1_Preference": 0.7, "weighted_results_image2_Preference": 0.3,
              "weighted_results_image1_Coherence": 0.2, "weighted_results_image2_Coherence": 0.8,
              "weighted_results_image1_Alignment": 0.5, "weighted_results_image2_Alignment": 0.5}  # fmt: skip
    row = {"prompt": "a bee", "image1": image_value(RED), "image2": image_value(GREEN), **scores}
    # sums: image1 1.4, image2 1.6 -> image2 chosen
    (pair,) = load("rapidata-t2i", write_parquet(tmp_path / "w.parquet", [row], weighted)).records
    assert_image_pair(pair, "w:0", "a bee", GREEN, RED)
