"""The original LightRFT's (verl's) data layout loads through ``data.*``: split directories,
chat prompts with a system message, answers in ``extra_info.reference`` /
``reward_model.ground_truth``, recipe labels, Image features, ``audio_url`` parts and
``name:path`` lists mixed by ``sampling_probs``. Fixtures are written here, never downloaded."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import datasets
import numpy as np
import pytest
from PIL import Image

from lightrft.adapters.datasets import BadRowError, DatasetStats, HfPromptDataset, RowSpec
from lightrft.adapters.datasets.data_mix import mix_prompt_sources
from lightrft.adapters.datasets.data_specs import DataSpec, parse_data_specs
from lightrft.adapters.datasets.split_files import SplitNotFoundError, split_paths
from lightrft.adapters.hf.multimodal_inputs import MediaRequirements
from lightrft.domain.ports import PromptSource
from lightrft.domain.types import PromptRecord
from lightrft.entrypoints.config.sections import DatasetConfig
from lightrft.entrypoints.wiring.data import build_prompts
from tests.helpers.hf_media_files import wav_bytes
from tests.helpers.original_layout import (
    GSM8K_SYSTEM,
    avqa_row,
    gsm8k_row,
    verl_row,
    write_geo3k_dir,
    write_gsm8k_dir,
    write_rows,
)
from tests.helpers.tiny_multimodal import tiny_mm_tokenizer
from tests.unit.adapters.datasets.tiny_tokenizers import byte_tokenizer


def prompts(section: str = "data.train", media: Any = None, **fields: Any) -> PromptSource:
    tokenizer = fields.pop("tokenizer", None) or byte_tokenizer()
    source = build_prompts(DatasetConfig(**fields), tokenizer, media, section)
    assert source is not None
    return source


def records(source: PromptSource) -> list[Any]:
    return [source[i] for i in range(len(source))]


def test_a_directory_gives_train_to_data_train_and_test_to_data_eval(tmp_path: Path) -> None:
    data = write_gsm8k_dir(tmp_path / "gsm8k", {"train": 3, "test": 2})
    train = records(prompts(path=str(data), label_key="label"))
    held = records(prompts("data.eval", path=str(data), label_key="label"))
    assert [r.uid for r in train] == ["train:0", "train:1", "train:2"]
    assert [r.reference for r in train] == ["2", "4", "6"]  # extra_info.reference
    assert [r.uid for r in held] == ["test:0", "test:1"] and held[1].reference == "4"
    assert all(r.metadata["label"] == "gsm8k_rule" for r in train + held)  # from extra_info
    assert held[0].metadata["where"] == f"{data / 'test.parquet'} row 0"
    chosen = records(prompts(path=str(data), split="test"))  # data.train.split
    assert [r.uid for r in chosen] == ["test:0", "test:1"]
    assert "label" not in chosen[0].metadata  # no label_key: no label


def test_the_rows_system_message_is_kept_and_the_configured_one_not_added(tmp_path: Path) -> None:
    data = write_gsm8k_dir(tmp_path / "gsm8k", {"train": 1})
    (record,) = records(prompts(path=str(data), system_prompt="Be brief."))
    assert f"<|im_start|>system\n{GSM8K_SYSTEM}<|im_end|>" in record.prompt_text
    assert "<|im_start|>user\ntrain 0: 1 + 1?<|im_end|>" in record.prompt_text
    assert "Be brief." not in record.prompt_text


def test_verl_rows_take_the_answer_from_reward_model_ground_truth(tmp_path: Path) -> None:
    rows = [verl_row("What is 2 + 5?", "7", "train", 0), verl_row("3 * 3?", "9", "train", 1)]
    write_rows(tmp_path / "verl" / "train.parquet", rows)
    write_rows(tmp_path / "verl" / "test.parquet", rows[:1])
    got = records(prompts(path=str(tmp_path / "verl"), label_key="label"))
    assert [r.reference for r in got] == ["7", "9"]
    assert all("label" not in r.metadata for r in got)  # unlabelled rows: reward.sources


def test_the_top_level_answer_and_label_come_before_extra_info(tmp_path: Path) -> None:
    row = gsm8k_row("1 + 1?", "2", "train", 0)
    rows = [
        {**row, "reference": "two", "label": "mine"},  # both at the top level
        {**row, "reference": None, "label": None},  # null at the top: extra_info's
        {**row, "reference": "5", "label": "", "extra_info": {"reference": "9"}},
    ]
    write_rows(tmp_path / "mixed.jsonl", rows)
    got = records(prompts(path=str(tmp_path / "mixed.jsonl"), label_key="label"))
    assert [r.reference for r in got] == ["two", "2", "5"]
    assert [r.metadata.get("label") for r in got] == ["mine", "gsm8k_rule", None]


def test_a_row_without_an_answer_anywhere_is_named(tmp_path: Path) -> None:
    good = gsm8k_row("1 + 1?", "2", "test", 0)
    bad = {**good, "reward_model": {"ground_truth": None}, "extra_info": {"label": "gsm8k_rule"}}
    path = write_rows(tmp_path / "d" / "test.parquet", [good, bad, good])
    with pytest.raises(BadRowError) as info:
        prompts("data.eval", path=str(tmp_path / "d"))
    assert str(info.value) == f"{path} row 1: missing key 'reference'"
    label = {**good, "label": ["not", "a", "label"]}
    path = write_rows(tmp_path / "labels.jsonl", [good, label])
    with pytest.raises(BadRowError, match=r"labels\.jsonl row 1: expected a label string, got "):
        prompts(path=str(path), label_key="label")


def test_a_missing_split_names_the_key_and_the_splits_found(tmp_path: Path) -> None:
    data = write_gsm8k_dir(tmp_path / "gsm8k", {"train": 1})
    with pytest.raises(SplitNotFoundError, match=r"no 'test' split .* splits found: \['train'\]; "
                       r"set data\.eval\.split"):  # fmt: skip
        prompts("data.eval", path=str(data))
    assert len(prompts("data.eval", path=str(data), split="train")) == 1


def test_shards_of_a_split_are_read_in_order(tmp_path: Path) -> None:
    rows = [gsm8k_row(f"q{i}", str(i), "train", i) for i in range(4)]
    write_rows(tmp_path / "d" / "data" / "train-00000-of-00002.jsonl", rows[:2])
    write_rows(tmp_path / "d" / "data" / "train-00001-of-00002.jsonl", rows[2:])
    write_rows(tmp_path / "d" / "data" / "test-00000-of-00001.jsonl", rows[:1])
    assert [p.name for p in split_paths(tmp_path / "d", "train")] == [
        "train-00000-of-00002.jsonl",
        "train-00001-of-00002.jsonl",
    ]
    got = records(prompts(path=str(tmp_path / "d")))
    assert [r.reference for r in got] == ["0", "1", "2", "3"]


def test_a_saved_dataset_dict_reads_the_split(tmp_path: Path) -> None:
    rows = {"prompt": ["a?", "b?"], "reference": ["1", "2"]}
    splits = {"train": datasets.Dataset.from_dict(rows), "test": datasets.Dataset.from_dict(
        {"prompt": ["c?"], "reference": ["3"]})}  # fmt: skip
    datasets.DatasetDict(splits).save_to_disk(str(tmp_path / "saved"))
    assert [r.reference for r in records(prompts("data.eval", path=str(tmp_path / "saved")))] == [
        "3"
    ]
    assert len(prompts(path=str(tmp_path / "saved"))) == 2


def test_geo3k_rows_with_image_features_load_their_diagrams(tmp_path: Path) -> None:
    images = [Image.new("RGB", (30, 20), "red"), Image.new("RGB", (16, 16), "blue")]
    data = write_geo3k_dir(tmp_path / "geo3k", images)
    media = MediaRequirements(image_placeholder="<|image_pad|>")
    source = prompts(
        path=str(data), images_key="images", label_key="label", tokenizer=tiny_mm_tokenizer(),
        media=media,
    )  # fmt: skip
    got = records(source)
    assert [r.reference for r in got] == ["3", "4"]
    assert [r.metadata["label"] for r in got] == ["geo3k_rule", "geo3k_rule"]
    assert got[0].multimodal["images"][0].size == (30, 20)
    assert got[1].multimodal["images"][0].getpixel((0, 0)) == (0, 0, 255)
    pad = "<|vision_start|><|image_pad|><|vision_end|>"
    assert f"{pad}Find x in figure 0." in got[0].prompt_text  # at the <image> marker


def test_image_paths_relative_to_the_data_file_load(tmp_path: Path) -> None:
    Image.new("RGB", (8, 6), "green").save(tmp_path / "fig.png")
    row = {**gsm8k_row("<image>Find x.", "5", "train", 0), "images": ["fig.png"]}
    write_rows(tmp_path / "train.jsonl", [row])
    (record,) = records(prompts(path=str(tmp_path / "train.jsonl"), images_key="images",
                                tokenizer=tiny_mm_tokenizer()))  # fmt: skip
    assert record.multimodal["images"][0].size == (8, 6)


def _wav(path: Path, seconds: float, rate: int = 16000) -> None:
    t = np.arange(int(seconds * rate)) / rate
    path.write_bytes(wav_bytes((0.3 * np.sin(2 * np.pi * 440 * t)).astype(np.float32), rate))


def test_r1_aqa_rows_read_their_clip_from_an_audio_url_part(tmp_path: Path) -> None:
    (tmp_path / "avqa" / "clips").mkdir(parents=True)
    _wav(tmp_path / "avqa" / "clips" / "a.wav", 0.25)
    _wav(tmp_path / "avqa" / "clips" / "b.wav", 0.5)
    rows = [avqa_row("clips/a.wav", "What sound?", "dog"), avqa_row("clips/b.wav", "And?", "cat")]
    write_rows(tmp_path / "avqa" / "train.parquet", rows)  # parts stored with every key
    media = MediaRequirements(audio_placeholder="<|AUDIO|>", audio_sampling_rate=16000)
    source = prompts(path=str(tmp_path / "avqa"), label_key="label",
                     tokenizer=tiny_mm_tokenizer(), media=media)  # fmt: skip
    got = records(source)
    assert [r.reference for r in got] == ["dog", "cat"]  # the top-level reference
    assert [r.metadata["label"] for r in got] == ["avqa_rule", "avqa_rule"]
    clips = [r.multimodal["audios"] for r in got]
    assert [(len(c), c[0][0].shape[0], c[0][1]) for c in clips] == [
        (1, 4000, 16000),
        (1, 8000, 16000),
    ]
    assert got[0].prompt_text.count("<|AUDIO|>") == 1 and "What sound?" in got[0].prompt_text
    missing = [avqa_row("clips/none.wav", "Q?", "x")]
    path = write_rows(tmp_path / "bad" / "train.parquet", missing)
    with pytest.raises(BadRowError, match=rf"{path} row 0: audio file .*none\.wav does not exist"):
        prompts(path=str(tmp_path / "bad"), tokenizer=tiny_mm_tokenizer(), media=media)


def test_data_specs_name_their_datasets() -> None:
    assert parse_data_specs("gsm8k:/d/g,geo3k:/d/geo") == [
        DataSpec("gsm8k", Path("/d/g")),
        DataSpec("geo3k", Path("/d/geo")),
    ]
    assert parse_data_specs("a/b.jsonl, /x/y") == [
        DataSpec(None, Path("a/b.jsonl")),
        DataSpec(None, Path("/x/y")),
    ]
    with pytest.raises(ValueError, match="unique"):
        parse_data_specs("a:/x,a:/y")
    with pytest.raises(ValueError, match="empty dataset entry"):
        parse_data_specs("a:/x,,b:/y")


def test_named_datasets_mix_by_probability_with_a_seed(tmp_path: Path) -> None:
    gsm = write_gsm8k_dir(tmp_path / "gsm8k", {"train": 30})
    verl = tmp_path / "verl"
    write_rows(verl / "train.parquet", [verl_row(f"v{i}", str(i), "train", i) for i in range(10)])
    spec = f"gsm8k:{gsm},verl:{verl}"
    mixed = records(prompts(path=spec, sampling_probs=[0.75, 0.25], seed=3))
    again = records(prompts(path=spec, sampling_probs=[0.75, 0.25], seed=3))
    assert [r.uid for r in mixed] == [r.uid for r in again]  # seeded
    assert len(mixed) == 40
    names = [r.uid.split(":")[0] for r in mixed]
    assert all(r.metadata["dataset"] == n for r, n in zip(mixed, names, strict=True))
    assert 20 <= names.count("gsm8k") <= 38  # expected 30 of 40 at p = 0.75
    only = records(prompts(path=spec, sampling_probs=[1.0, 0.0]))
    assert {r.uid.split(":")[0] for r in only} == {"gsm8k"}
    listed = records(prompts(path=spec))  # no probabilities: one after the other
    assert [r.uid for r in listed[29:31]] == ["gsm8k:train:29", "verl:train:0"]
    assert prompts(path=spec).stats.kept == 40  # type: ignore[attr-defined]


def test_sampling_probs_need_one_value_per_dataset() -> None:
    with pytest.raises(ValueError, match="sampling_probs has 1 values but path names 2"):
        DatasetConfig(path="a:/x,b:/y", sampling_probs=[1.0])
    with pytest.raises(ValueError, match="finite, >= 0 and not all 0"):
        DatasetConfig(path="a:/x,b:/y", sampling_probs=[0.0, 0.0])
    json.dumps(DatasetConfig(path="a:/x", sampling_probs=[1.0]).model_dump())


class Listed:
    """A prompt source without stats."""

    def __init__(self, uids: list[str]) -> None:
        self.records = [PromptRecord(u, "q", (1,)) for u in uids]

    def __len__(self) -> int:
        return len(self.records)

    def __getitem__(self, index: int) -> PromptRecord:
        return self.records[index]


def test_mixed_sources_index_in_order_and_count_their_rows() -> None:
    mixed = mix_prompt_sources([Listed(["a", "b"]), Listed(["c"])], ["x", None])
    assert [mixed[i].uid for i in range(-3, 3)] == ["x:a", "x:b", "c", "x:a", "x:b", "c"]
    assert mixed[0].metadata == {"dataset": "x"}
    assert mixed.stats == DatasetStats(rows=3, kept=3)  # type: ignore[attr-defined]
    with pytest.raises(IndexError):
        mixed[3]


def test_hf_prompt_dataset_reads_a_split_directory(tmp_path: Path) -> None:
    data = write_gsm8k_dir(tmp_path / "gsm8k", {"train": 2, "test": 1}, suffix=".jsonl")
    spec = RowSpec(label_key="label")
    held = HfPromptDataset(data, byte_tokenizer(), spec=spec, split="test")
    assert [(r.uid, r.reference, r.metadata["label"]) for r in records(held)] == [
        ("gsm8k:0", "2", "gsm8k_rule")
    ]
    assert len(HfPromptDataset(data, byte_tokenizer())) == 2
