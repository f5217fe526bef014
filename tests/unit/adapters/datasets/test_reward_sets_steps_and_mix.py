"""The process-reward layout (Math-Shepherd / PRM800K-style step labels), the plain
preference rows by name, ``name:path`` lists with sampling probabilities, the registry."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from lightrft.adapters.datasets.bad_rows import BadRowsError
from lightrft.adapters.datasets.preferences import PreferenceSpec, load_preferences
from lightrft.adapters.datasets.reward_sets import (
    REWARD_DATASETS,
    RewardSetOptions,
    load_reward_data,
    load_reward_pairs,
)
from lightrft.domain.process_rewards import StepLabelledExample
from lightrft.domain.registry import UnknownChoiceError
from tests.helpers.reward_set_files import colour_png, rendered, renderer, write_json

TAG = "ки"
SHEPHERD = (
    f"What is 2+3*4? Step 1: 3*4 = 12. {TAG}\nStep 2: 2+12 = 15. {TAG}\n"
    f"Step 3: The answer is 15. {TAG}"
)
STEPS = ("Step 1: 3*4 = 12.", "Step 2: 2+12 = 15.", "Step 3: The answer is 15.")


def solution(
    uid: str, prompt: str, steps: tuple[str, ...], labels: tuple[float, ...]
) -> StepLabelledExample:
    """A reward-set record: named by ``file:row``, the data set's own label numbers."""
    return StepLabelledExample(prompt, steps, labels, uid=uid, label_range=None)


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def load(name: str, path: Path, on_bad_row: str = "error"):  # noqa: ANN201
    options = RewardSetOptions(on_bad_row=on_bad_row)  # type: ignore[arg-type]
    return REWARD_DATASETS.get(name).load(path, renderer(), options)


def test_process_reward_rows_in_each_published_shape(tmp_path: Path) -> None:
    rows = [
        {"input": SHEPHERD, "value": ["+", "-", "-"]},  # the original's / OpenRLHF's keys
        {"input": SHEPHERD, "label": SHEPHERD.replace(TAG, "+", 1).replace(TAG, "-")},
        {"input": SHEPHERD, "value": [0.9, 0.25, 0]},  # soft labels as numbers
        {"prompt": "What is 1+1?", "steps": ["1+1 = 2.", "The answer is 2."],
         "labels": [1, -1]},  # PRM800K-style ratings, explicit steps
    ]  # fmt: skip
    loaded = load("process-reward", write_jsonl(tmp_path / "prm.jsonl", rows))
    assert loaded.records == [
        solution("prm:0", "What is 2+3*4?", STEPS, (1.0, 0.0, 0.0)),
        solution("prm:1", "What is 2+3*4?", STEPS, (1.0, 0.0, 0.0)),
        solution("prm:2", "What is 2+3*4?", STEPS, (0.9, 0.25, 0.0)),
        solution("prm:3", "What is 1+1?", ("1+1 = 2.", "The answer is 2."), (1.0, -1.0)),
    ]
    assert REWARD_DATASETS.get("math-shepherd") is REWARD_DATASETS.get("process-reward")


def test_bad_step_rows_are_named_by_file_and_row(tmp_path: Path) -> None:
    rows = [
        {"input": SHEPHERD, "value": ["+", "-", "-"]},
        {"input": SHEPHERD, "value": ["+", "-"]},
        {"input": SHEPHERD, "value": ["+", "?", "-"]},
        {"input": "no tags here", "value": ["+"]},
        {"input": SHEPHERD.replace("Step 1:", "First,"), "value": ["+", "+", "+"]},
        {"input": SHEPHERD, "label": SHEPHERD.replace(TAG, "+").replace("15.", "16.")},
    ]
    path = write_jsonl(tmp_path / "prm.jsonl", rows)
    with pytest.raises(BadRowsError) as info:
        load("process-reward", path)
    assert str(info.value).splitlines() == [
        "5 bad rows:",
        "  prm.jsonl row 1: 2 labels for 3 tagged steps in 'value'",
        "  prm.jsonl row 2: expected a label token ('+', '-') or a number, got '?' in 'value'",
        f"  prm.jsonl row 3: expected text with a step tag {TAG!r} after every step in 'input'",
        "  prm.jsonl row 4: cannot tell the question from the first step (no 'Step 1\\\\s*:') "
        "in 'input'",
        "  prm.jsonl row 5: label text differs from the input at character 51 in 'label'",
    ]
    skipped = load("process-reward", path, "skip")
    assert [s.uid for s in skipped.records] == ["prm:0"] and skipped.skipped == 5


def test_step_record_checks_its_own_shape() -> None:
    with pytest.raises(ValueError, match="u: 1 steps but 2 labels"):
        solution("u", "p", ("a",), (1.0, 0.0))
    with pytest.raises(ValueError, match="at least one step"):
        solution("u", "p", (), ())


def plain_pairs(path: Path, n: int, tag: str) -> Path:
    rows = [
        {"prompt": f"{tag} {i}?", "chosen": f"yes {i}", "rejected": f"no {i}"} for i in range(n)
    ]
    return write_jsonl(path, rows)


def hpdv3(root: Path, n: int) -> Path:
    colour_png(root / "a.png", (1, 2, 3))
    colour_png(root / "b.png", (4, 5, 6))
    rows = [{"prompt": f"picture {i}", "path1": "a.png", "path2": "b.png"} for i in range(n)]
    return write_json(root / "train.json", rows)


def test_name_path_list_reads_each_set_with_its_loader(tmp_path: Path) -> None:
    plain = plain_pairs(tmp_path / "prefs.jsonl", 2, "q")
    images = hpdv3(tmp_path / "hpd", 1)
    loaded = load_reward_data(f"{plain},hpdv3:{images}", renderer())
    assert [(p.uid, p.prompt, p.chosen) for p in loaded.records] == [
        ("prefs:0", rendered("q 0?"), "yes 0"),  # unnamed: this project's preference rows
        ("prefs:1", rendered("q 1?"), "yes 1"),
        ("hpdv3:train:0", rendered("picture 0"), "<image>"),
    ]


def test_name_path_list_mixes_by_probability(tmp_path: Path) -> None:
    first = plain_pairs(tmp_path / "a.jsonl", 40, "a")
    text = f"preferences:{first},hpdv3:{hpdv3(tmp_path / 'hpd', 40)}"
    mixed = load_reward_data(text, renderer(), probabilities=[0.9, 0.1], seed=3)
    assert len(mixed.records) == 80  # as many draws as the sets hold
    by_set = Counter(p.uid.split(":")[0] for p in mixed.records)
    assert by_set["preferences"] > 60 and by_set["hpdv3"] < 20  # ~72 / ~8 expected
    again = load_reward_data(text, renderer(), probabilities=[0.9, 0.1], seed=3)
    assert [p.uid for p in again.records] == [p.uid for p in mixed.records]
    other = load_reward_data(text, renderer(), probabilities=[0.9, 0.1], seed=4)
    assert [p.uid for p in other.records] != [p.uid for p in mixed.records]
    # within one pass of a set every pair comes once before any comes again
    drawn = [p.uid for p in mixed.records if p.uid.startswith("preferences:")][:40]
    assert len(set(drawn)) == len(drawn)
    with pytest.raises(ValueError, match="need one probability per dataset, got 1 for 2"):
        load_reward_data(text, renderer(), probabilities=[1.0])


def test_name_path_list_errors(tmp_path: Path) -> None:
    plain = plain_pairs(tmp_path / "a.jsonl", 2, "a")
    steps = write_jsonl(tmp_path / "s.jsonl", [{"input": SHEPHERD, "value": ["+", "+", "+"]}])
    with pytest.raises(ValueError, match="cannot mix preference pairs with step-labelled rows"):
        load_reward_data(f"preferences:{plain},process-reward:{steps}", renderer())
    with pytest.raises(UnknownChoiceError, match="unknown reward data set 'hpdv4'; valid"):
        load_reward_data(f"hpdv4:{plain}", renderer())
    (only,) = load_reward_data(f"process-reward:{steps}", renderer()).records
    assert only.uid == "process-reward:s:0"


def test_registry_names_every_published_set() -> None:
    assert set(REWARD_DATASETS.names()) == {
        "preferences", "hpdv3", "imagerewarddb", "imagegen-cot-reward-5k",
        "omnirewardbench-t2i", "omnirewardbench-t2v", "omnirewardbench-t2a",
        "rapidata-t2v", "rapidata-i2v", "rapidata-t2i", "audio-alpaca", "process-reward",
    }  # fmt: skip
    kinds = {name: REWARD_DATASETS.get(name).kind for name in REWARD_DATASETS.names()}
    assert {n for n, k in kinds.items() if k == "steps"} == {"process-reward"}


def test_load_reward_pairs_is_load_preferences_for_a_plain_file(tmp_path: Path) -> None:
    rows = [{"prompt": "q?", "chosen": "yes", "rejected": "no", "m": 0.5},
            {"prompt": "r?", "chosen": "same", "rejected": "same", "m": 1.0}]  # fmt: skip
    path = write_jsonl(tmp_path / "prefs.jsonl", rows)
    spec = PreferenceSpec(margin_key="m", on_bad_row="skip")
    assert load_reward_pairs(str(path), renderer(), spec) == load_preferences(
        path, renderer(), spec
    )
    pairs, skipped = load_reward_pairs(str(path), renderer(), spec)
    assert [(p.uid, p.margin) for p in pairs] == [("prefs:0", 0.5)] and skipped == 1


def test_load_reward_pairs_refuses_what_the_trainer_cannot_read(tmp_path: Path) -> None:
    images = hpdv3(tmp_path / "hpd", 1)
    steps = write_jsonl(tmp_path / "s.jsonl", [{"input": SHEPHERD, "value": ["+", "+", "+"]}])
    with pytest.raises(ValueError, match="^hpdv3 gives images responses; this trainer reads text$"):
        load_reward_pairs(f"hpdv3:{images}", renderer(), responses={"text"})
    with pytest.raises(ValueError, match="process-reward gives step-labelled rows"):
        load_reward_pairs(f"process-reward:{steps}", renderer())
    pairs, _ = load_reward_pairs(f"hpdv3:{images}", renderer(), responses={"text", "images"})
    assert [p.uid for p in pairs] == ["hpdv3:train:0"]
